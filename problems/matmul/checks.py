"""Property cases of matmul's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"m": 96, "k": 2048, "n": 80, "seed": 19}


def _split_k(data: tuple, splits: int) -> torch.Tensor:
    a, b = data
    chunks = zip(a.float().chunk(splits, dim=1), b.float().chunk(splits, dim=0), strict=True)
    partials = [(ac @ bc).half() for ac, bc in chunks]  # fp16 partial products, as cuBLAS's split-K writes them
    return torch.stack(partials).float().sum(0).half()


def _fp16_accumulate(a: torch.Tensor, b: torch.Tensor, chunk: int = 32) -> torch.Tensor:
    """Each chunk of 32 products summed exactly, the running total kept in fp16 (an fp16-accumulator MMA)."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float16)
    for start in range(0, a.shape[1], chunk):
        acc = (acc.float() + a[:, start : start + chunk].float() @ b[start : start + chunk].float()).half()
    return acc


CORRECT = {
    "fp32 accumulate": lambda d: (d[0].float() @ d[1].float()).half(),
    "split-K 4, fp16 partials": lambda d: _split_k(d, 4),
    "split-K 16, fp16 partials": lambda d: _split_k(d, 16),
}

WRONG = {
    "lower precision": lambda d, g: (d[0].bfloat16().float() @ d[1].bfloat16().float()).half(),
    "fp16 accumulator": lambda d, g: _fp16_accumulate(d[0], d[1]),
}
