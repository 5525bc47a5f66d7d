# expect: accepted
# LSD radix sort, 4 bits a pass, 8 passes. The float's bits are first mapped to an unsigned key whose order is
# the float order (flip all bits of negatives, the sign bit of positives). Each pass: count the digits of each
# block (kernel 1), turn the counts into each (digit, block)'s first output slot (one torch.cumsum over the
# small count table), then place every element at its slot plus its rank among equal digits in its block
# (kernel 2). Stable, so the passes compose into a sort.
import torch
import triton
import triton.language as tl

BLOCK = 1024
RADIX = 16


@triton.jit
def _digits(x_ptr, pid, n, shift, FIRST: tl.constexpr, BLOCK: tl.constexpr, RADIX: tl.constexpr):
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    key = tl.load(x_ptr + offsets, mask=mask, other=0)
    if FIRST:  # float bits -> order-preserving key
        key = key ^ ((key >> 31) | -2147483648)
    digit = (key >> shift) & (RADIX - 1)
    onehot = (digit[:, None] == tl.arange(0, RADIX)[None, :]) & mask[:, None]
    return key, digit, onehot.to(tl.int32), mask


@triton.jit
def _count(x_ptr, counts_ptr, n, blocks, shift, FIRST: tl.constexpr, BLOCK: tl.constexpr, RADIX: tl.constexpr):
    pid = tl.program_id(0)
    _, _, onehot, _ = _digits(x_ptr, pid, n, shift, FIRST, BLOCK, RADIX)
    tl.store(counts_ptr + tl.arange(0, RADIX) * blocks + pid, tl.sum(onehot, axis=0))


@triton.jit
def _scatter(
    x_ptr, out_ptr, starts_ptr, n, blocks, shift,
    FIRST: tl.constexpr, LAST: tl.constexpr, BLOCK: tl.constexpr, RADIX: tl.constexpr,
):
    pid = tl.program_id(0)
    key, digit, onehot, mask = _digits(x_ptr, pid, n, shift, FIRST, BLOCK, RADIX)
    rank = tl.sum(tl.cumsum(onehot, axis=0) * onehot, axis=1) - 1  # earlier elements of this block, same digit
    slot = tl.load(starts_ptr + digit * blocks + pid, mask=mask, other=0) + rank
    if LAST:  # key -> float bits
        key = key ^ (((key >> 31) ^ -1) | -2147483648)
    tl.store(out_ptr + slot, key, mask=mask)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    n = x.numel()
    blocks = triton.cdiv(n, BLOCK)
    counts = torch.empty(RADIX * blocks, device=x.device, dtype=torch.int32)
    src = x.view(torch.int32)
    buffers = [torch.empty_like(src), torch.empty_like(src)]
    for p, shift in enumerate(range(0, 32, 4)):
        first, last = p == 0, shift == 28
        dst = buffers[p % 2]
        _count[(blocks,)](src, counts, n, blocks, shift, FIRST=first, BLOCK=BLOCK, RADIX=RADIX)
        starts = (torch.cumsum(counts, 0, dtype=torch.int32) - counts).contiguous()  # digit-major exclusive scan
        _scatter[(blocks,)](src, dst, starts, n, blocks, shift, FIRST=first, LAST=last, BLOCK=BLOCK, RADIX=RADIX)
        src = dst
    return src.view(torch.float32)
