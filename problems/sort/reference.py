"""sort: fp32 values in ascending order."""

from __future__ import annotations

import torch
from _lib import Inputs, compare


def generate_input(size: int, seed: int) -> tuple[torch.Tensor]:
    """Normal values with spread 1000 rounded to multiples of 1/8: many distinct values and many repeats."""
    return ((Inputs(seed).randn(size) * 8000).round() / 8,)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return torch.sort(x).values


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    # A sorted permutation of the input is unique: the check is exact.
    return compare(output, ref_kernel(data), torch.float32, atol=0.0, rtol=0.0)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    # A lower bound: read every value once and write it once.
    return {"bytes": 8 * size, "flops": 0}
