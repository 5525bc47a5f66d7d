"""Property cases of fp8_gemm's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"m": 128, "n": 96, "k": 4096, "seed": 23}


def _truncate_mantissa(x: torch.Tensor, bits: int) -> torch.Tensor:
    return (x.contiguous().view(torch.int32) & ~((1 << (23 - bits)) - 1)).view(torch.float32)


def _limited_accumulator(d: tuple, promote: int | None) -> torch.Tensor:
    """Hopper's fp8 tensor cores as DeepSeek-V3 describes them: each 32-product step exact, the running sum kept to
    13 mantissa bits (truncated), and, unless ``promote`` is None (fast accumulation), added into an fp32 total
    every ``promote`` products."""
    a, b, scale_a, scale_b = d
    af, bf = a.float(), b.float()
    total = torch.zeros(a.shape[0], b.shape[0])
    acc = torch.zeros_like(total)
    for start in range(0, a.shape[1], 32):
        acc = _truncate_mantissa(acc + af[:, start : start + 32] @ bf[:, start : start + 32].T, 13)
        if promote is not None and (start + 32) % promote == 0:
            total, acc = total + acc, torch.zeros_like(acc)
    return ((total + acc) * scale_a * scale_b).bfloat16()


def _split_k(d: tuple, splits: int) -> torch.Tensor:
    a, b, scale_a, scale_b = d
    chunks = zip(a.float().chunk(splits, dim=1), b.float().chunk(splits, dim=1), strict=True)
    return torch.stack([((ac @ bc.T) * scale_a * scale_b).bfloat16() for ac, bc in chunks]).float().sum(0).bfloat16()


CORRECT = {
    "fp32 dequantised": lambda d: ((d[0].float() @ d[1].float().T) * d[2] * d[3]).bfloat16(),
    "torch._scaled_mm": lambda d: torch._scaled_mm(d[0], d[1].T, scale_a=d[2], scale_b=d[3],
                                                   out_dtype=torch.bfloat16),
    "13-bit accumulator promoted every 128": lambda d: _limited_accumulator(d, 128),
}

WRONG = {
    "scale_b dropped": lambda d, g: ((d[0].float() @ d[1].float().T) * d[2]).bfloat16(),
    "scale_a dropped": lambda d, g: ((d[0].float() @ d[1].float().T) * d[3]).bfloat16(),
    "bf16 dequantised inputs": lambda d, g: ((d[0].float() * d[2]).bfloat16().float()
                                             @ (d[1].float() * d[3].T).bfloat16().float().T).bfloat16(),
    "split-K 4, bf16 partials": lambda d, g: _split_k(d, 4),
    "fast accumulation (never promoted)": lambda d, g: _limited_accumulator(d, None),
    "e5m2 inputs": lambda d, g: ((d[0].float().to(torch.float8_e5m2).float()
                                  @ d[1].float().to(torch.float8_e5m2).float().T) * d[2] * d[3]).bfloat16(),
}
