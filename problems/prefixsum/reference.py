"""prefixsum: the inclusive scan of an fp32 vector, y[i] = x[0] + ... + x[i]. The reference scans in fp64."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

# Allowed error at i: TOLERANCE * 2**-24 * sqrt(i + 1) * ||x[0..i]||_2, which grows linearly with i.
# Adding x[0..i] one after another in fp32 (the simplest correct scan, and what torch.cumsum does on a CPU)
# has a rounding error of about 2**-24 * i * rms(x) / sqrt(3) at position i; blocked or tree scans are well
# below that. 8 keeps a sequential scan inside at many standard deviations (tests/problems/test_problem_checks.py),
# while leaving out an element, an exclusive scan or an fp16/bf16 scan are far outside it.
TOLERANCE = 8


def generate_input(size: int, seed: int) -> tuple[torch.Tensor]:
    return (Inputs(seed).randn(size),)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return torch.cumsum(x.double(), 0).to(torch.float32)


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    (x,) = data
    x64 = x.double()
    expected = torch.cumsum(x64, 0)
    count = torch.arange(1, x.numel() + 1, device=x.device, dtype=torch.float64)
    allowed = TOLERANCE * 2**-24 * (count * torch.cumsum(x64.square(), 0)).sqrt()
    return compare(output, expected, torch.float32, atol=allowed, rtol=2**-24)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": 8 * size, "flops": size}
