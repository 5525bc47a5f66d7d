"""matmul: c = a @ b for fp16 a (m x k) and b (k x n), fp16 out."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

# Allowed error of c[i, j]: 2**-11 * |c[i, j]| (fp16 rounding of the result) plus
# TOLERANCE * 2**-11 * ||a[i, :]||_2 * ||b[:, j]||_2 / sqrt(k), about 2**-11 times the spread of one product
# sum. Measured (CPU emulation, 512x4096x512): split-K with fp16 partials summed in fp32 errs by at most 3.1
# units, summed in fp16 four ways 4.6 units; bf16 inputs 17-22 units, an fp16 accumulator 40+. 10 sits between
# (tests/problems/test_problem_checks.py keeps both sides; a GPU test checks cuBLAS's own fp16 result at 4096).
TOLERANCE = 10


def generate_input(m: int, k: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    inputs = Inputs(seed)
    return inputs.randn(m, k, dtype=torch.float16), inputs.randn(k, n, dtype=torch.float16)


def _exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b in fp32. fp16 values are exact in TF32 and their products exact in fp32, so TF32 may stay on."""
    return a.float() @ b.float()


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return _exact(a, b).to(torch.float16)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    a, b = data
    expected = _exact(a, b)
    spread = a.float().norm(dim=1, keepdim=True) * b.float().norm(dim=0, keepdim=True) / max(a.shape[1], 1) ** 0.5
    return compare(output, expected, torch.float16, atol=TOLERANCE * 2**-11 * spread, rtol=2**-11)


def speed_of_light(m: int, k: int, n: int, **_: object) -> dict[str, int]:
    return {"bytes": 2 * (m * k + k * n + m * n), "flops": 2 * m * n * k}
