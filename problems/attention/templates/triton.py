# Starter for attention in Triton: one program per (block of queries, batch-head), keys and values in blocks with
# an online softmax (running maximum and sum in fp32), p rounded to bf16 for the p @ v product, the causal mask
# applied to every block up to the diagonal. Next steps: no mask left of the diagonal, autotuned blocks.
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _bf16_in_f32(x):
    """x rounded to the nearest bf16 value (ties to even), kept as fp32 (Triton's CPU interpreter truncates in
    .to(tl.bfloat16) and multiplies bf16 as raw integers)."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr,
                     CPU: tl.constexpr):
    base = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rows[:, None] * HEAD_DIM + dims[None, :], mask=rows[:, None] < seq, other=0.0)
    if CPU:
        q = q.to(tl.float32)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    total = tl.zeros((BLOCK,), tl.float32)
    acc = tl.zeros((BLOCK, HEAD_DIM), tl.float32)
    for start in range(0, tl.minimum((tl.program_id(0) + 1) * BLOCK, seq), BLOCK):
        cols = start + tl.arange(0, BLOCK)
        k = tl.load(k_ptr + base + cols[None, :] * HEAD_DIM + dims[:, None], mask=cols[None, :] < seq, other=0.0)
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_DIM + dims[None, :], mask=cols[:, None] < seq, other=0.0)
        if CPU:
            k, v = k.to(tl.float32), v.to(tl.float32)
        s = tl.where(rows[:, None] >= cols[None, :], tl.dot(q, k) * scale, -1.0e6)
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        total = total * alpha + tl.sum(p, 1)
        if CPU:
            acc = tl.dot(_bf16_in_f32(p), v, acc * alpha[:, None])
        else:
            acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
    o = acc / total[:, None]
    if CPU:
        o = _bf16_in_f32(o)
    tl.store(o_ptr + base + rows[:, None] * HEAD_DIM + dims[None, :], o.to(tl.bfloat16), mask=rows[:, None] < seq)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q, k, v = data
    batch, heads, seq, dim = q.shape
    o = torch.empty_like(q)
    block = 64 if q.is_cuda else 32
    grid = (triton.cdiv(seq, block), batch * heads)
    attention_kernel[grid](q, k, v, o, seq, 1 / math.sqrt(dim), HEAD_DIM=dim, BLOCK=block, CPU=not q.is_cuda,
                           num_warps=4, num_stages=2)
    return o
