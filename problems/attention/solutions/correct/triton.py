# expect: accepted
# FlashAttention-2 style forward: one program per (block of BLOCK_M queries, batch-head); keys and values stream
# through in blocks of BLOCK_N with an online softmax (running maximum and sum in fp32, exp2 with the scale and
# log2(e) folded into one multiplier), the scores never leave registers, p is rounded to bf16 for the p @ v tensor
# core product into an fp32 accumulator. The causal mask costs nothing off the diagonal: blocks left of it run
# without a mask, blocks right of it are never visited, only the diagonal blocks compare indices. Programs start
# with the last query blocks (the longest rows) so the short ones fill the tail. On a GPU a short autotune over
# block shapes and pipeline depth picks the best for each (seq, head_dim); on the CPU interpreter one small
# configuration runs with the bf16 rounding spelled out (the interpreter multiplies bf16 as raw integers).
import math

import torch
import triton
import triton.language as tl

LOG2_E = 1.4426950408889634


@triton.jit
def _bf16_in_f32(x):
    """x rounded to the nearest bf16 value (ties to even), kept as fp32."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _key_blocks(
    acc, l_i, m_i, q, k_base, v_base, start_m, qk_scale, seq, offs_m, offs_n, offs_d,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, DIAGONAL: tl.constexpr,
    CPU: tl.constexpr,
):
    if DIAGONAL:  # the key blocks that share indices with this query block: masked
        lo, hi = start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, seq)
    else:  # every key block left of the diagonal: no mask, always inside seq
        lo, hi = 0, start_m * BLOCK_M
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if DIAGONAL:
            k = tl.load(k_base + cols[None, :] * HEAD_DIM + offs_d[:, None], mask=cols[None, :] < seq, other=0.0)
            v = tl.load(v_base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=cols[:, None] < seq, other=0.0)
        else:
            k = tl.load(k_base + cols[None, :] * HEAD_DIM + offs_d[:, None])
            v = tl.load(v_base + cols[:, None] * HEAD_DIM + offs_d[None, :])
        if CPU:
            k, v = k.to(tl.float32), v.to(tl.float32)
        qk = tl.dot(q, k)
        if DIAGONAL:
            qk = tl.where(offs_m[:, None] >= cols[None, :], qk * qk_scale, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if CPU:  # noqa: SIM108 (a statement keeps the branch a compile-time one in Triton)
            acc = tl.dot(_bf16_in_f32(p), v, acc)
        else:
            acc = tl.dot(p.to(tl.bfloat16), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def _attention(
    q_ptr, k_ptr, v_ptr, o_ptr, seq, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CPU: tl.constexpr,
):
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)  # the longest rows first
    base = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq, other=0.0)
    if CPU:
        q = q.to(tl.float32)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    acc, l_i, m_i = _key_blocks(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, start_m, qk_scale, seq,
                                offs_m, offs_n, offs_d, BLOCK_M, BLOCK_N, HEAD_DIM, False, CPU)
    acc, l_i, m_i = _key_blocks(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, start_m, qk_scale, seq,
                                offs_m, offs_n, offs_d, BLOCK_M, BLOCK_N, HEAD_DIM, True, CPU)
    o = acc / l_i[:, None]
    out = o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    if CPU:  # the interpreter truncates in .to(tl.bfloat16): round first (exact afterwards)
        o = _bf16_in_f32(o)
    tl.store(out, o.to(tl.bfloat16), mask=offs_m[:, None] < seq)


_tuned = triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_stages=2, num_warps=8),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_stages=4, num_warps=4),
    ],
    key=["seq", "HEAD_DIM"],
)(_attention)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q, k, v = data
    batch, heads, seq, dim = q.shape
    o = torch.empty_like(q)
    qk_scale = LOG2_E / math.sqrt(dim)
    if q.is_cuda:
        grid = lambda meta: (triton.cdiv(seq, meta["BLOCK_M"]), batch * heads)  # noqa: E731
        _tuned[grid](q, k, v, o, seq, qk_scale, HEAD_DIM=dim, CPU=False)
    else:
        _attention[(triton.cdiv(seq, 32), batch * heads)](
            q, k, v, o, seq, qk_scale, HEAD_DIM=dim, BLOCK_M=32, BLOCK_N=16, CPU=True
        )
    return o
