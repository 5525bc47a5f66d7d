"""allgather_gemm: rank r's output is cat(a of every rank) @ b of rank r, in bf16 (a problem of several ranks:
docs/multigpu.md). The check multiplies in fp32."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

# Allowed error of c[i, j]: 2**-8 * |c[i, j]| (bf16 rounding of the result) plus
# TOLERANCE * 2**-8 * ||A[i, :]||_2 * ||b[:, j]||_2 / sqrt(k), as matmul's check with bf16's unit: a GEMM that
# accumulates in fp32 in any order errs by far less; rows of the wrong rank, a missing shard or a bf16
# accumulator err by far more (tests/problems/test_multigpu_problems.py keeps both sides).
TOLERANCE = 10


def rank_seed(seed: int, rank: int) -> int:
    return seed * 64 + rank


def generate_input(rank: int, world_size: int, m: int, k: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    inputs = Inputs(rank_seed(seed, rank))
    return inputs.randn(m, k, dtype=torch.bfloat16), inputs.randn(k, n, dtype=torch.bfloat16)


def _exact(a_all: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The product in fp32: bf16 values are exact in TF32 and their products exact in fp32."""
    return a_all.float() @ b.float()


def ref_kernel(inputs: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
    a_all = torch.cat([a for a, _ in inputs])
    return [_exact(a_all, b).to(torch.bfloat16) for _, b in inputs]


def check_implementation(
    inputs: list[tuple[torch.Tensor, torch.Tensor]], rank: int, output: object
) -> tuple[bool, str]:
    a_all = torch.cat([a for a, _ in inputs])
    b = inputs[rank][1]
    expected = _exact(a_all, b)
    spread = a_all.float().norm(dim=1, keepdim=True) * b.float().norm(dim=0, keepdim=True) / max(b.shape[0], 1) ** 0.5
    return compare(output, expected, torch.bfloat16, atol=TOLERANCE * 2**-8 * spread, rtol=2**-8)


def speed_of_light(m: int, k: int, n: int, world_size: int = 1, **_: object) -> dict[str, int]:
    """One rank's work: read every rank's rows and its own columns, write its output, and the GEMM of the whole A
    with them. The evaluator passes ``world_size``; without it, one shard's work (a lower bound)."""
    rows = world_size * m
    return {"bytes": 2 * (rows * k + k * n + rows * n), "flops": 2 * rows * n * k}
