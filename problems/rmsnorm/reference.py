"""rmsnorm: y = x / sqrt(mean(x^2 over the last dimension) + eps) * weight, bf16 in and out."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

EPS = 1e-6


def generate_input(rows: int, hidden: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Normal rows scaled by 10**u, u uniform in [-4, 1) (so eps matters for some rows); row 0 is zero."""
    inputs = Inputs(seed)
    x = inputs.randn(rows, hidden)
    scale = 10 ** (5 * inputs.rand(rows, 1) - 4)
    scale[0] = 0
    weight = 1 + 0.1 * inputs.randn(hidden)
    return (x * scale).to(torch.bfloat16), weight.to(torch.bfloat16)


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + EPS) * weight


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    return _rmsnorm(x.float(), weight.float()).to(torch.bfloat16)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    x, weight = data
    expected = _rmsnorm(x.double(), weight.double())
    # An fp32 computation rounded to bf16 is within half a bf16 ulp (2**-9 relative); allow 2**-8 for any
    # accumulation order. Computing in bf16 or misplacing eps fails.
    return compare(output, expected, torch.bfloat16, atol=1e-6, rtol=2**-8)


def speed_of_light(rows: int, hidden: int, **_: object) -> dict[str, int]:
    return {"bytes": 2 * (2 * rows * hidden + hidden), "flops": 4 * rows * hidden}
