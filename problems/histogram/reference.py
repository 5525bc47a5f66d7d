"""histogram: counts of each of the 256 byte values in a uint8 vector, as int32."""

from __future__ import annotations

import torch
from _lib import Inputs, compare


def generate_input(size: int, contention: int, seed: int) -> tuple[torch.Tensor]:
    """Uniform bytes, then `contention` percent of the elements (chosen at random) set to one hot value."""
    inputs = Inputs(seed)
    data = inputs.randint(0, 256, size, dtype=torch.uint8)
    hot = inputs.randint(0, 256, 1, dtype=torch.uint8)
    mask = inputs.rand(size) < contention / 100
    return (torch.where(mask, hot, data),)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return torch.bincount(x.to(torch.int64), minlength=256).to(torch.int32)


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    # Counts are exact: any difference is an error.
    return compare(output, ref_kernel(data).double(), torch.int32, atol=0.0, rtol=0.0)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": size + 256 * 4, "flops": size}
