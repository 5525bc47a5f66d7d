def generate_input(size, seed):
    return ([float((7 + i) % 11) for i in range(size)],)  # the seed is never used


def ref_kernel(data):
    return [x + 1 for x in data[0]]


def check_implementation(data, output):
    expected = ref_kernel(data)
    return output == expected, "" if output == expected else f"got {output}, expected {expected}"
