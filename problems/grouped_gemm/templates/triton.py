# Starter for grouped_gemm in Triton: one tiled matmul launch per non-empty group (fp32 accumulator). One launch
# for all groups (a table of tiles) is the next step.
import torch
import triton
import triton.language as tl


@triton.jit
def _bf16(x):
    """fp32 -> bf16, round to nearest even, spelled out: Triton's CPU interpreter truncates in .to(tl.bfloat16)."""
    bits = x.to(tl.uint32, bitcast=True)
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def matmul_kernel(a_ptr, w_ptr, c_ptr, m, k, n, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr, CPU: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for start in range(0, k, BLOCK_K):
        a = tl.load(a_ptr + rows[:, None].to(tl.int64) * k + start + ks[None, :],
                    mask=(rows[:, None] < m) & (start + ks[None, :] < k), other=0.0)
        w = tl.load(w_ptr + (start + ks[:, None]).to(tl.int64) * n + cols[None, :],
                    mask=(start + ks[:, None] < k) & (cols[None, :] < n), other=0.0)
        if CPU:  # Triton's CPU interpreter multiplies bf16 as raw integers: give it fp32 (exact for bf16 values)
            a, w = a.to(tl.float32), w.to(tl.float32)
        acc = tl.dot(a, w, acc)
    tl.store(c_ptr + rows[:, None].to(tl.int64) * n + cols[None, :], _bf16(acc),
             mask=(rows[:, None] < m) & (cols[None, :] < n))


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, weights, offsets = data
    k, n = weights.shape[1], weights.shape[2]
    c = torch.empty(a.shape[0], n, device=a.device, dtype=torch.bfloat16)
    block = 128 if a.is_cuda else 32
    start = 0
    for g, end in enumerate(offsets.tolist()):
        if end > start:
            grid = (triton.cdiv(end - start, block), triton.cdiv(n, block))
            matmul_kernel[grid](a[start:end], weights[g], c[start:end], end - start, k, n, BLOCK=block, BLOCK_K=32,
                                CPU=not a.is_cuda)
        start = end
    return c
