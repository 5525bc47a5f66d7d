"""fp8_gemm: c = (a * scale_a) @ (b * scale_b)^T for e4m3 a (m x k) and b (n x k) with fp32 row scales, bf16 out."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

E4M3_MAX = 448.0
# Allowed error of c[i, j]: 2**-8 * |c[i, j]| (bf16 rounding of the result) plus
# TOLERANCE * 2**-11 * scale_a[i] * scale_b[j] * ||a[i, :]||_2 * ||b[j, :]||_2 / sqrt(k), about 2**-11 times
# the spread of one scaled product sum. The products are exact in fp32, so this asks for fp32 accumulation with
# the scales applied to the accumulator and one rounding to bf16. Measured (CPU emulation, 128 x 96 x 4096; the
# smallest TOLERANCE that accepts each): products summed in fp32 in any order and torch._scaled_mm on the CPU 0; an
# accumulator keeping 13 mantissa bits, promoted to fp32 every 128 products (Hopper's fp8 tensor cores without
# fast accumulation, as DeepSeek-V3 describes them) 0.4. Must fail: the scaled inputs rounded to bf16 before a
# bf16 GEMM 14.4, split-K 4 with bf16 partial results 16.1, the 13-bit accumulator never promoted (fast
# accumulation over all of k) 18.4, e5m2 inputs 703, one side's scales dropped 5e7. 4 sits between.
TOLERANCE = 4


def generate_input(
    m: int, n: int, k: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows of a and of b are normal values times 10**u, u uniform in [-2, 2), each quantised to e4m3 with its own
    fp32 scale (its largest magnitude over 448): a (m, k) and b (n, k) e4m3, scale_a (m, 1) and scale_b (1, n)."""
    inputs = Inputs(seed)

    def quantised(rows: int) -> tuple[torch.Tensor, torch.Tensor]:
        full = inputs.randn(rows, k) * 10 ** (4 * inputs.rand(rows, 1) - 2)
        scale = full.abs().amax(dim=1, keepdim=True).clamp_(min=1e-30) / E4M3_MAX
        return (full / scale).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn), scale

    a, scale_a = quantised(m)
    b, scale_b = quantised(n)
    return a, b, scale_a, scale_b.reshape(1, n)


def _exact(data: tuple[torch.Tensor, ...], dtype: torch.dtype) -> torch.Tensor:
    """(a @ b^T) * scale_a * scale_b in ``dtype``. e4m3 values are exact in fp32 and their products too."""
    a, b, scale_a, scale_b = data
    return (a.to(dtype) @ b.to(dtype).T) * scale_a.to(dtype) * scale_b.to(dtype)


def ref_kernel(data: tuple[torch.Tensor, ...]) -> torch.Tensor:
    return _exact(data, torch.float32).to(torch.bfloat16)


def check_implementation(data: tuple[torch.Tensor, ...], output: object) -> tuple[bool, str]:
    a, b, scale_a, scale_b = data
    expected = _exact(data, torch.float64)
    norms_a = a.double().norm(dim=1, keepdim=True) * scale_a.double()
    norms_b = b.double().norm(dim=1).reshape(1, -1) * scale_b.double()
    spread = norms_a * norms_b / max(a.shape[1], 1) ** 0.5
    return compare(output, expected, torch.bfloat16, atol=TOLERANCE * 2**-11 * spread, rtol=2**-8)


def speed_of_light(m: int, n: int, k: int, **_: object) -> dict[str, int]:
    # Read a and b (1 byte each) and the scales (4 bytes each), write c (2 bytes).
    return {"bytes": m * k + n * k + 4 * (m + n) + 2 * m * n, "flops": 2 * m * n * k}
