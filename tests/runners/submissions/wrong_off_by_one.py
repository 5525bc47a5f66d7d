def custom_kernel(data):
    a, b, out = data
    out.copy_(a + b)
    if out.numel() > 5:
        out[5] += 1.0
    return out
