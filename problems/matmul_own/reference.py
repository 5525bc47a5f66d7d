"""matmul_own: c = a @ b for fp16 a (m x k) and b (k x n), fp16 out, without a library GEMM (task.yml's
library_policy). The reference and its check are matmul's; the reference itself runs in the trusted evaluator,
which no policy binds."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

TOLERANCE = 10
"""Units of 2**-11 times the spread of one product sum (problems/matmul/reference.py says how it was measured)."""


def generate_input(m: int, k: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    inputs = Inputs(seed)
    return inputs.randn(m, k, dtype=torch.float16), inputs.randn(k, n, dtype=torch.float16)


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return (a.float() @ b.float()).to(torch.float16)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    a, b = data
    spread = a.float().norm(dim=1, keepdim=True) * b.float().norm(dim=0, keepdim=True) / max(a.shape[1], 1) ** 0.5
    return compare(output, a.float() @ b.float(), torch.float16, atol=TOLERANCE * 2**-11 * spread, rtol=2**-11)


def speed_of_light(m: int, k: int, n: int, **_: object) -> dict[str, int]:
    return {"bytes": 2 * (m * k + k * n + m * n), "flops": 2 * m * n * k}
