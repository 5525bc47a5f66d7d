import struct


def generate_input(size, seed):
    (small,) = struct.unpack("<h", struct.pack("<h", seed))  # a 16-bit seed field: fails above 32767
    return ([float((small * 7 + i) % 11) for i in range(size)],)


def ref_kernel(data):
    return [x + 1 for x in data[0]]


def check_implementation(data, output):
    expected = ref_kernel(data)
    return output == expected, "" if output == expected else f"got {output}, expected {expected}"
