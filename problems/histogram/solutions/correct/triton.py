# expect: accepted
# A persistent grid: each program builds a private 256-bin histogram in registers over a strided range
# and adds it to the global counts once (256 atomics per program, whatever the contention).
import torch
import triton
import triton.language as tl

BLOCK = 8192


@triton.jit
def _histogram(x_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    acc = tl.zeros((256,), dtype=tl.int32)
    for start in range(pid * BLOCK, n, step):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask, other=0, eviction_policy="evict_first").to(tl.int32)
        acc += tl.histogram(x, 256, mask=mask)
    tl.atomic_add(counts_ptr + tl.arange(0, 256), acc)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    n = x.numel()
    counts = torch.zeros(256, device=x.device, dtype=torch.int32)
    programs = min(triton.cdiv(n, BLOCK), 4 * 132)
    _histogram[(programs,)](x, counts, n, BLOCK=BLOCK, num_warps=8)
    return counts
