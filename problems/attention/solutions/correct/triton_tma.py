# expect: accepted
# needs: cuda
# The FlashAttention-2 style forward of triton.py with Hopper's tensor memory accelerator: q, k, v and o move
# by TMA (tl.make_tensor_descriptor over the (batch * heads * seq, head_dim) view) into shared memory, pipelined
# by tl.range over num_stages, and feed wgmma (k transposed in shared memory, no copy). Tiles never straddle two
# batch-heads because the fast path asks seq to be a multiple of 128 (every benchmark is); other lengths, and GPUs
# before sm_90, run torch's scaled_dot_product_attention instead.
import math

import torch
import triton
import triton.language as tl

LOG2_E = 1.4426950408889634


@triton.jit
def _key_blocks(
    acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, qk_scale, offs_m, offs_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr,
):
    if DIAGONAL:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, start_m * BLOCK_M
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T)
        if DIAGONAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk * qk_scale, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def _attention_tma(
    q_ptr, k_ptr, v_ptr, o_ptr, rows, seq, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    desc_q = tl.make_tensor_descriptor(q_ptr, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(k_ptr, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(v_ptr, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(o_ptr, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)  # the longest rows first
    row0 = tl.program_id(1) * seq  # this batch-head's first row
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = desc_q.load([row0 + start_m * BLOCK_M, 0])
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    acc, l_i, m_i = _key_blocks(acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, qk_scale, offs_m, offs_n,
                                BLOCK_M, BLOCK_N, False)
    acc, l_i, m_i = _key_blocks(acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, qk_scale, offs_m, offs_n,
                                BLOCK_M, BLOCK_N, True)
    desc_o.store([row0 + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(q.dtype))


_tuned = triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_stages=2, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_stages=4, num_warps=8),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_stages=4, num_warps=4),
    ],
    key=["seq", "HEAD_DIM"],
)(_attention_tma)


def _scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    return torch.empty(size, device="cuda", dtype=torch.int8)  # device-side descriptors live here


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    q, k, v = data
    batch, heads, seq, dim = q.shape
    if not q.is_cuda or torch.cuda.get_device_capability(q.device)[0] < 9 or seq % 128:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    triton.set_allocator(_scratch)
    o = torch.empty_like(q)
    grid = lambda meta: (seq // meta["BLOCK_M"], batch * heads)  # noqa: E731
    _tuned[grid](q, k, v, o, batch * heads * seq, seq, LOG2_E / math.sqrt(dim), HEAD_DIM=dim)
    return o
