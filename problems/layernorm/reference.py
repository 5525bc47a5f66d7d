"""layernorm: y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension, fp16 or bf16 in and out."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

EPS = 1e-5
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
# The output's own rounding: an fp32 result rounded to the output dtype is within half an ulp, at most 2**-11
# (fp16) or 2**-8 (bf16) of |y|. RTOL allows twice that for fp16 and exactly that for bf16 (as rmsnorm does); an
# fp32 result that lands next to a rounding boundary is covered by the ATOL term below.
RTOL = {torch.float16: 2**-10, torch.bfloat16: 2**-8}
# On top of RTOL * |y|: ATOL_UNITS fp32 units (2**-24) of the row's magnitude in normaliser units,
# ((|mean| + std) / sqrt(var + eps) + |x_hat|) * |weight| + |bias|. Rows sit up to 1000 standard deviations from
# zero, so an fp32 mean carries an error of a few units of |mean| that every correct kernel shares.
# Measured (CPU, 256 rows of 1000 and 8192 columns, fp16 and bf16): torch's fp32 layer_norm needs 2.4 units,
# two passes with blocked sums 0.95, a strictly sequential fp32 mean and variance 7.1; the one-pass variance
# E[x^2] - E[x]^2 in fp32 needs 6700+ units, the unbiased variance (n - 1) 93+ (350+ at 1000 columns).
ATOL_UNITS = 32


def generate_input(
    rows: int, cols: int, dtype: str, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Row r is scale_r * (c_r + normal): scale_r = 10**u, u uniform in [-3, 1) (so eps matters for the smallest
    rows), c_r uniform in [-1000, 1000) (so the mean dwarfs the spread); row 0 is constant (variance 0).
    weight is 1 + 0.1 * normal, bias 0.1 * normal."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
    inputs = Inputs(seed)
    x = inputs.randn(rows, cols)
    scale = 10 ** (4 * inputs.rand(rows, 1) - 3)
    offset = 2000 * inputs.rand(rows, 1) - 1000
    x[0] = 0
    weight = 1 + 0.1 * inputs.randn(cols)
    bias = 0.1 * inputs.randn(cols)
    out = DTYPES[dtype]
    return ((x + offset) * scale).to(out), weight.to(out), bias.to(out)


def _layernorm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """y, mean, the normaliser sqrt(var + eps) and x_hat, in x's dtype (two passes: no cancellation)."""
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    norm = (centred.square().mean(dim=-1, keepdim=True) + EPS).sqrt()
    x_hat = centred / norm
    return x_hat * weight + bias, mean, norm, x_hat


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight, bias = data
    return _layernorm(x.float(), weight.float(), bias.float())[0].to(x.dtype)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    x, weight, bias = data
    xd = x.double()
    expected, mean, norm, x_hat = _layernorm(xd, weight.double(), bias.double())
    std = (norm.square() - EPS).clamp_(min=0).sqrt_()
    magnitude = ((mean.abs() + std) / norm + x_hat.abs()) * weight.double().abs() + bias.double().abs()
    atol = magnitude.mul_(ATOL_UNITS * 2**-24)
    return compare(output, expected, x.dtype, atol=atol, rtol=RTOL[x.dtype])


def speed_of_light(rows: int, cols: int, **_: object) -> dict[str, int]:
    # Read x, weight and bias, write y (2 bytes each); mean, centre, square-sum, scale, weight, bias: 7 flops each.
    return {"bytes": 2 * (2 * rows * cols + 2 * cols), "flops": 7 * rows * cols}
