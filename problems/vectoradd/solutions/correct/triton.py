# expect: accepted
# Memory-bound: big blocks, 8 elements (16 bytes) per thread and load, a flat 1-D grid. No eviction hint: with
# evict_first on the loads it ran 12% behind torch.add at 16384² on the lent H200 (415 against 362 µs); without it,
# level with it (367 µs) and ahead on the small case (benchmarks/vectoradd_variants.py, docs/problems.md).
import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a + b, mask=mask)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    n = a.numel()
    _add[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK, num_warps=8)
    return out
