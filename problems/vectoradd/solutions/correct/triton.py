# expect: accepted
# Memory-bound: big blocks, 8 elements (16 bytes) per thread and load, a flat 1-D grid.
import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask, eviction_policy="evict_first")
    b = tl.load(b_ptr + offsets, mask=mask, eviction_policy="evict_first")
    tl.store(out_ptr + offsets, a + b, mask=mask)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    n = a.numel()
    _add[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK, num_warps=8)
    return out
