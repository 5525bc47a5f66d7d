def generate_input(size, seed):
    return ([float((seed * 7 + i) % 11) for i in range(size)],)


def ref_kernel(data):
    return [x + 1 for x in data[0]]


def check_implementation(data, output):
    if output is None or len(output) != len(data[0]):
        return False, "wrong length"
    off = [abs(o - e) > 1e-6 for o, e in zip(output, ref_kernel(data), strict=True)]
    return not any(off), ""
