"""attention: causal self-attention forward, o = softmax(q k^T / sqrt(d) + causal mask) v, bf16 in and out."""

from __future__ import annotations

import math

import torch
from _lib import Inputs, compare

# Allowed error of o[b, h, i, :]: 2**-8 * |o| (bf16 rounding of the result) plus
# ATOL_UNITS * 2**-8 * sqrt(sum_j p_ij**2 * v_j**2), the spread of the error that rounding each probability p_ij
# to bf16 before the p @ v product adds (what FlashAttention does). Measured (CPU, 2 x 4 x 700 x 64 and
# 1 x 4 x 2048 x 128; the smallest ATOL_UNITS that accepts each): fp32 throughout 0.0003; torch's bf16
# scaled_dot_product_attention 1.7; online softmax over key blocks of 64 or 128 with p rounded to bf16 1.7,
# with p truncated to bf16 3.0. Must fail: the running output accumulator rounded to bf16 after each key block
# 8-16; no rescaling of the accumulator when the running maximum grows 830+; the diagonal block left unmasked
# 8700+. Scores rounded to bf16 before the softmax need 4.1-4.5: do not. 4 sits between.
ATOL_UNITS = 4
# Batch-heads per chunk of the check: its fp64 scores take chunk * seq**2 * 8 bytes.
CHECK_ELEMENTS = 1 << 27


def generate_input(
    batch: int, heads: int, seq: int, head_dim: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k and v of shape (batch, heads, seq, head_dim), standard normal bf16, contiguous."""
    inputs = Inputs(seed)
    q = inputs.randn(batch, heads, seq, head_dim, dtype=torch.bfloat16)
    k = inputs.randn(batch, heads, seq, head_dim, dtype=torch.bfloat16)
    v = inputs.randn(batch, heads, seq, head_dim, dtype=torch.bfloat16)
    return q, k, v


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q, k, v = data
    out = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    return out.to(torch.bfloat16)


def _exact(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact output and sqrt(p**2 @ v**2), in fp64, a few batch-heads at a time."""
    batch, heads, seq, dim = q.shape
    qf, kf, vf = (t.reshape(batch * heads, seq, dim) for t in (q, k, v))
    out = torch.empty(batch * heads, seq, dim, device=q.device, dtype=torch.float64)
    spread = torch.empty_like(out)
    future = torch.ones(seq, seq, device=q.device, dtype=torch.bool).triu_(1)
    step = max(1, CHECK_ELEMENTS // max(seq * seq, 1))
    for first in range(0, batch * heads, step):
        part = slice(first, first + step)
        scores = (qf[part].double() @ kf[part].double().transpose(1, 2)).mul_(1 / math.sqrt(dim))
        p = scores.masked_fill_(future, -math.inf).softmax(dim=-1)
        vd = vf[part].double()
        out[part] = p @ vd
        spread[part] = (p.square_() @ vd.square_()).sqrt_()
    return out.view(batch, heads, seq, dim), spread.view(batch, heads, seq, dim)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    q, k, v = data
    expected, spread = _exact(q, k, v)
    return compare(output, expected, torch.bfloat16, atol=spread.mul_(ATOL_UNITS * 2**-8), rtol=2**-8)


def speed_of_light(batch: int, heads: int, seq: int, head_dim: int, **_: object) -> dict[str, int]:
    # Read q, k, v and write o (bf16). Flops: only the unmasked half of the scores: query i meets keys 0..i,
    # seq * (seq + 1) / 2 pairs per batch-head, each 2 * head_dim flops for q k^T and 2 * head_dim for p v.
    pairs = batch * heads * seq * (seq + 1) // 2
    return {"bytes": 2 * 4 * batch * heads * seq * head_dim, "flops": 4 * head_dim * pairs}
