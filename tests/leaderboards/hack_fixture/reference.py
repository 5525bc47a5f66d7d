"""Triple fp32 rows x cols: the input hacks' fixture problem (tests/leaderboards/test_hacks.py)."""

import torch


def generate_input(rows, cols, seed):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, cols, generator=generator),)


def ref_kernel(data):
    if data[0].shape[1] == 7:  # a reference with a hole, so that a hack it fails is refused (the fixture's own)
        return data[0] * 2
    return data[0] * 3


def check_implementation(data, output):
    expected = data[0] * 3
    if not isinstance(output, torch.Tensor) or output.shape != expected.shape or output.dtype != expected.dtype:
        return False, "not a tensor of the expected shape and dtype"
    ok = bool(((output - expected).abs() <= 2**-20 * expected.abs()).all())
    return ok, "" if ok else "values differ"


def speed_of_light(rows, cols, **_):
    return {"bytes": 8 * rows * cols, "flops": rows * cols}
