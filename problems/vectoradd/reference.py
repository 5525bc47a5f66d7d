"""vectoradd: out = a + b for fp16 N x N matrices, written into the given ``out`` and returned."""

from __future__ import annotations

import torch
from _lib import Inputs, compare


def generate_input(size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    inputs = Inputs(seed)
    a, b = inputs.randn(size, size, dtype=torch.float16), inputs.randn(size, size, dtype=torch.float16)
    return a, b, inputs.nans(size, size, dtype=torch.float16)


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    return torch.add(a, b, out=out)


def check_implementation(data: tuple[torch.Tensor, ...], output: object) -> tuple[bool, str]:
    a, b, _ = data
    expected = a.float() + b.float()
    # fp16 addition is correctly rounded: a correct kernel is within half an fp16 ulp of the exact sum.
    return compare(output, expected, torch.float16, atol=1e-7, rtol=2**-11)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": 3 * size * size * 2, "flops": size * size}
