"""Property cases of grouped_gemm's check, run by tests/problems/test_problem_checks.py (docs/authoring.md,
section 6)."""

from collections.abc import Callable

import torch

CASE = {"groups": 16, "tokens": 1000, "k": 2048, "n": 96, "seed": 5}


def _grouped(d: tuple, product: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    a, weights, offsets = d
    out = torch.zeros(a.shape[0], weights.shape[2])
    start = 0
    for g, end in enumerate(offsets.tolist()):
        if end > start:
            out[start:end] = product(a[start:end].float(), weights[g].float())
        start = end
    return out.bfloat16()


def _split_k_bf16(x: torch.Tensor, y: torch.Tensor, splits: int) -> torch.Tensor:
    chunks = zip(x.chunk(splits, dim=1), y.chunk(splits, dim=0), strict=True)
    return torch.stack([(xc @ yc).bfloat16() for xc, yc in chunks]).float().sum(0)


def _bf16_accumulator(x: torch.Tensor, y: torch.Tensor, chunk: int = 32) -> torch.Tensor:
    acc = torch.zeros(x.shape[0], y.shape[1])
    for start in range(0, x.shape[1], chunk):
        acc = (acc + x[:, start : start + chunk] @ y[start : start + chunk]).bfloat16().float()
    return acc


def _rows_shifted(d: tuple, shift: int) -> torch.Tensor:
    """Each row multiplied by the weights of the group ``shift`` places after its own (clamped)."""
    a, weights, offsets = d
    group = torch.searchsorted(offsets, torch.arange(a.shape[0], dtype=offsets.dtype), right=True)
    group = (group + shift).clamp_(0, weights.shape[0] - 1)
    return torch.bmm(a.float().unsqueeze(1), weights.float()[group]).squeeze(1).bfloat16()


def _skipping_empty(d: tuple) -> torch.Tensor:
    a, weights, offsets = d
    sizes = torch.diff(offsets, prepend=offsets.new_zeros(1)).tolist()
    chunks = [c for c in a.split(sizes) if c.shape[0]]
    return torch.cat([c.float() @ w.float() for c, w in zip(chunks, weights, strict=False)]).bfloat16()


def _boundary(d: tuple) -> torch.Tensor:
    """searchsorted without right=True: the first row of each group goes to the group before it."""
    a, weights, offsets = d
    group = torch.searchsorted(offsets, torch.arange(a.shape[0], dtype=offsets.dtype)).clamp_(max=weights.shape[0] - 1)
    return torch.bmm(a.float().unsqueeze(1), weights.float()[group]).squeeze(1).bfloat16()


CORRECT = {
    "fp32 per group": lambda d: _grouped(d, torch.matmul),
    "split-K 4, bf16 partials": lambda d: _grouped(d, lambda x, y: _split_k_bf16(x, y, 4)),
    "split-K 16, bf16 partials": lambda d: _grouped(d, lambda x, y: _split_k_bf16(x, y, 16)),
    "torch._grouped_mm": lambda d: torch._grouped_mm(d[0], d[1], offs=d[2], out_dtype=torch.bfloat16),
}

WRONG = {
    "bf16 accumulator": lambda d, g: _grouped(d, _bf16_accumulator),
    "next group's weights": lambda d, g: _rows_shifted(d, 1),
    "empty groups skipped": lambda d, g: _skipping_empty(d),
    "first row of a group to the previous group": lambda d, g: _boundary(d),
}
