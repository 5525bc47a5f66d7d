"""Property cases of conv2d's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"batch": 4, "channels": 64, "height": 23, "width": 29, "out_channels": 16, "kernel_size": 3, "seed": 20}


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """Round fp32 to TF32 (10 mantissa bits), round-to-nearest-even, as tensor cores read fp32 inputs."""
    bits = t.contiguous().view(torch.int32)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return rounded.view(torch.float32)


def _tf32_truncated(t: torch.Tensor) -> torch.Tensor:
    """Round fp32 to TF32 toward zero, as Triton's tl.dot does on Hopper."""
    return (t.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)


CORRECT = {
    "TF32 inputs": lambda d: torch.nn.functional.conv2d(_tf32(d[0]), _tf32(d[1])),
    "TF32 truncated inputs": lambda d: torch.nn.functional.conv2d(_tf32_truncated(d[0]), _tf32_truncated(d[1])),
    "fp64 rounded": lambda d: torch.nn.functional.conv2d(d[0].double(), d[1].double()).float(),
}

WRONG = {
    "lower precision": lambda d, g: torch.nn.functional.conv2d(d[0].bfloat16().float(), d[1].bfloat16().float()),
    "flipped kernel": lambda d, g: torch.nn.functional.conv2d(d[0], d[1].flip(2, 3)),
}
