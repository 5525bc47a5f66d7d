"""vectorsum: the sum of a large fp32 vector, as a 0-dimensional fp32 tensor. The reference sums in fp64."""

from __future__ import annotations

import math

import torch
from _lib import Inputs, compare

# Allowed error: TOLERANCE * 2**-24 * ||x||_2. Measured in fp32 (numpy, 1e5 to 1.6e7 elements): tree sums err
# by about 3 such units, sequential sums of chunks of up to 65536 elements by at most 80, a fully sequential
# sum of 1e6 elements by 306; leaving out one element or summing in bf16 by thousands
# (tests/problems/test_problem_checks.py keeps both sides).
TOLERANCE = 384


def generate_input(size: int, seed: int) -> tuple[torch.Tensor]:
    return (Inputs(seed).randn(size),)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return x.sum(dtype=torch.float64).to(torch.float32)


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    (x,) = data
    expected = x.sum(dtype=torch.float64)
    if isinstance(output, torch.Tensor) and output.numel() == 1 and output.dim() <= 1:
        output = output.reshape(())
    allowed = TOLERANCE * 2**-24 * math.sqrt(float(x.double().square().sum()))
    return compare(output, expected, torch.float32, atol=allowed, rtol=0.0)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": 4 * size + 4, "flops": size}
