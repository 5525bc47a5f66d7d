# expect: accepted
# Reduce, then scan: pass 1 writes each block's total; the totals are scanned recursively (the same function
# on a 4096x shorter vector); pass 2 scans each block with tl.cumsum and adds the sum of the blocks before it.
# Three passes over memory (read, read, write) instead of the ideal two, and no inter-block waiting.
import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _block_totals(x_ptr, totals_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(totals_ptr + tl.program_id(0), tl.sum(x, axis=0))


@triton.jit
def _block_scan(x_ptr, y_ptr, carry_ptr, n, HAS_CARRY: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    scanned = tl.cumsum(tl.load(x_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_first"), axis=0)
    if HAS_CARRY:
        scanned += tl.load(carry_ptr + pid)  # inclusive scan of the totals, shifted: blocks before this one
    tl.store(y_ptr + offsets, scanned, mask=mask)


def _scan(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    y = torch.empty_like(x)
    blocks = triton.cdiv(n, BLOCK)
    if blocks == 1:
        _block_scan[(1,)](x, y, x, n, HAS_CARRY=False, BLOCK=BLOCK, num_warps=8)
        return y
    totals = torch.empty(blocks + 1, device=x.device, dtype=torch.float32)
    totals[0] = 0
    _block_totals[(blocks,)](x, totals[1:], n, BLOCK=BLOCK, num_warps=8)
    carry = _scan(totals[:-1])  # carry[b] = sum of the totals of blocks 0 .. b-1
    _block_scan[(blocks,)](x, y, carry, n, HAS_CARRY=True, BLOCK=BLOCK, num_warps=8)
    return y


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    return _scan(data[0])
