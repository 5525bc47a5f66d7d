import torch


def generate_input(rows, cols, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=generator), torch.arange(rows).flip(0)


def ref_kernel(data):
    x, order = data
    return x[order] * 2


def check_implementation(data, output):
    expected = ref_kernel(data)
    if not isinstance(output, torch.Tensor) or output.shape != expected.shape or output.dtype != expected.dtype:
        return False, "not a tensor of the expected shape and dtype"
    ok = bool(((output - expected).abs() <= 1e-6 * expected.abs()).all())
    return ok, "" if ok else "values differ"
