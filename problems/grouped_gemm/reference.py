"""grouped_gemm: a mixture-of-experts GEMM. Rows offsets[g-1]:offsets[g] of a (bf16) times weights[g] (bf16, k x n)."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

# Allowed error of c[i, j] (row i in group g): 2**-8 * |c[i, j]| (bf16 rounding of the result) plus
# TOLERANCE * 2**-8 * ||a[i, :]||_2 * ||weights[g][:, j]||_2 / sqrt(k), about 2**-8 times the spread of one
# product sum. bf16 products are exact in fp32. Measured (CPU emulation, 1000 rows in 16 groups, 8 of them empty,
# k = 2048, n = 96; the smallest TOLERANCE that accepts each): fp32 accumulation in any order 0, split-K 4 and 16
# with bf16 partial results (cuBLAS's reduced-precision split-K) 2.1; an accumulator rounded to bf16 after every
# 32 products 17.5; a row multiplied by another group's weights, zeros and the other mistakes hundreds and more.
# 6 sits between (the geometric mean of 2.1 and 17.5).
TOLERANCE = 6


def group_sizes(groups: int, tokens: int, seed: int) -> torch.Tensor:
    """How many of the tokens rows each group gets (int64, on the CPU, the same on every device): a skewed random
    split (group weights exp(1.5 * normal)); about one group in five, and always group groups // 2 when there are
    three or more, gets no rows."""
    gen = torch.Generator().manual_seed(seed ^ 0x5EED)
    share = (1.5 * torch.randn(groups, generator=gen)).exp()
    share[torch.rand(groups, generator=gen) < 0.2] = 0
    if groups >= 3:
        share[groups // 2] = 0
    if not share.any():
        share[0] = 1
    ends = share.cumsum(0) / share.sum()
    picks = torch.searchsorted(ends, torch.rand(tokens, generator=gen), right=True).clamp_(max=groups - 1)
    sizes = torch.bincount(picks, minlength=groups)
    sizes[share == 0] = 0  # rounding at the top of ends cannot give a row to an empty group
    sizes[int(share.argmax())] += tokens - int(sizes.sum())
    return sizes


def generate_input(
    groups: int, tokens: int, k: int, n: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """a (tokens, k) and weights (groups, k, n) standard normal bf16; offsets (groups,) int32, the end row of each
    group (cumulative sizes, as torch._grouped_mm's offs)."""
    inputs = Inputs(seed)
    a = inputs.randn(tokens, k, dtype=torch.bfloat16)
    weights = inputs.randn(groups, k, n, dtype=torch.bfloat16)
    offsets = group_sizes(groups, tokens, seed).cumsum(0).to(device=a.device, dtype=torch.int32)
    return a, weights, offsets


def _per_group(a: torch.Tensor, weights: torch.Tensor, offsets: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    out = torch.zeros(a.shape[0], weights.shape[2], device=a.device, dtype=dtype)
    start = 0
    for g, end in enumerate(offsets.tolist()):
        if end > start:
            out[start:end] = a[start:end].to(dtype) @ weights[g].to(dtype)
        start = end
    return out


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, weights, offsets = data
    return _per_group(a, weights, offsets, torch.float32).to(torch.bfloat16)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    a, weights, offsets = data
    expected = _per_group(a, weights, offsets, torch.float64)
    sizes = torch.diff(offsets.long(), prepend=offsets.new_zeros(1).long())
    column_norms = weights.float().norm(dim=1)  # (groups, n); fp32 is plenty for a bound (and half the memory)
    spread = a.float().norm(dim=1, keepdim=True) * column_norms.repeat_interleave(sizes, dim=0)
    spread /= max(a.shape[1], 1) ** 0.5
    return compare(output, expected, torch.bfloat16, atol=TOLERANCE * 2**-8 * spread, rtol=2**-8)


def speed_of_light(groups: int, tokens: int, k: int, n: int, seed: int, **_: object) -> dict[str, int]:
    # Read a, the weights of the groups that have rows and the offsets, write c; 2 flops per product.
    used = int((group_sizes(groups, tokens, seed) > 0).sum())
    return {"bytes": 2 * (tokens * k + used * k * n + tokens * n) + 4 * groups, "flops": 2 * tokens * k * n}
