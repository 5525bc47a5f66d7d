# expect: accepted
# A persistent grid: each program accumulates a BLOCK-wide fp32 vector over a strided range, reduces it once
# and adds it to the result atomically (one atomic per program, not per block).
import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(pid * BLOCK, n, step):
        offsets = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0, eviction_policy="evict_first")
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0))


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    n = x.numel()
    out = torch.zeros(1, device=x.device, dtype=torch.float32)
    programs = min(triton.cdiv(n, BLOCK), 4 * 132)
    _sum[(programs,)](x, out, n, BLOCK=BLOCK, num_warps=8)
    return out
