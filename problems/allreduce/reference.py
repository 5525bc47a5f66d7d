"""allreduce: every rank's output is the sum over ranks of their bf16 tensors (a problem of several ranks:
docs/multigpu.md). The check sums in fp64."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

# Allowed error per element: world_size * 2**-8 * sum_r |x_r|. A ring or tree of bf16 additions rounds each
# partial sum once (at most 2**-9 of the sum of the magnitudes so far), world_size - 1 times, plus the final
# rounding: at most about world_size * 2**-9 * sum_r |x_r|; twice that is allowed. A rank left out errs by |x_r|,
# far above it for all but a few elements (tests/problems/test_multigpu_problems.py keeps both sides).
TOLERANCE = 2**-8


def rank_seed(seed: int, rank: int) -> int:
    """Each rank's generator: its own stream, the same for the same case and rank."""
    return seed * 64 + rank


def generate_input(rank: int, world_size: int, size: int, seed: int) -> tuple[torch.Tensor]:
    return (Inputs(rank_seed(seed, rank)).randn(size, dtype=torch.bfloat16),)


def ref_kernel(inputs: list[tuple[torch.Tensor]]) -> list[torch.Tensor]:
    total = torch.stack([x.float() for (x,) in inputs]).sum(dim=0).to(torch.bfloat16)
    return [total.clone() for _ in inputs]


def check_implementation(inputs: list[tuple[torch.Tensor]], rank: int, output: object) -> tuple[bool, str]:
    expected = torch.zeros_like(inputs[0][0], dtype=torch.float64)
    magnitude = torch.zeros_like(expected)
    for (x,) in inputs:
        expected += x.double()
        magnitude += x.double().abs()
    return compare(output, expected, torch.bfloat16, atol=magnitude.mul_(len(inputs) * TOLERANCE), rtol=0.0)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    """One rank's least work: read its tensor and write the sum from its own memory (the peers' reads land in their
    memory), one addition per element. A lower bound at any world size (the links are slower than the memory)."""
    return {"bytes": 4 * size, "flops": size}
