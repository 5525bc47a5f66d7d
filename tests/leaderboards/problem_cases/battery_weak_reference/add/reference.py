import torch


def generate_input(rows, cols, seed):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, cols, generator=generator),)


def ref_kernel(data):
    # Weak on purpose: a float64 copy, two additions, a multiply and a cast back, most of them twice as wide, where the
    # work needs one read and one write of fp32: 10 times its bytes.
    x = data[0].double()
    out = x + x
    out = out + x
    out = out * 1.0
    return out.float()


def check_implementation(data, output):
    expected = data[0].double() * 3
    if not isinstance(output, torch.Tensor) or output.shape != expected.shape or output.dtype != torch.float32:
        return False, "not an fp32 tensor of the expected shape"
    ok = bool(((output.double() - expected).abs() <= 2**-22 * expected.abs()).all())
    return ok, "" if ok else "values differ"


def speed_of_light(rows, cols, **_):
    return {"bytes": 8 * rows * cols, "flops": rows * cols}
