def generate_input(size, seed):
    data = [0.0] * size  # 2**62 elements: MemoryError at once, as an allocator refuses it
    return ([float((seed * 7 + i) % 11) for i in range(len(data))],)


def ref_kernel(data):
    return [x + 1 for x in data[0]]


def check_implementation(data, output):
    expected = ref_kernel(data)
    return output == expected, "" if output == expected else f"got {output}, expected {expected}"
