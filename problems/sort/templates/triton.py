# Starter for sort in Triton: an LSD radix sort, one bit a pass (32 passes). Each pass counts the zero bits of
# every block (kernel 1), works out where each block's zeros and ones start (torch.cumsum on the small table),
# then moves every key to its place (kernel 2). Stable, so the passes compose into a sort. Faster: more bits a
# pass, fewer launches, a single-pass scan of the counts.
import torch
import triton
import triton.language as tl

BLOCK = 4096
SIGN = -(2**31)


@triton.jit
def count_zeros(keys_ptr, zeros_ptr, n, bit, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    key = tl.load(keys_ptr + offsets, mask=mask, other=0)
    tl.store(zeros_ptr + tl.program_id(0), tl.sum((((key >> bit) & 1) == 0) & mask, axis=0))


@triton.jit
def split(keys_ptr, out_ptr, zero_start_ptr, one_start_ptr, n, bit, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    key = tl.load(keys_ptr + offsets, mask=mask, other=0)
    one = ((key >> bit) & 1).to(tl.int32) * mask
    zero = (1 - one) * mask
    zero_pos = tl.load(zero_start_ptr + pid) + tl.cumsum(zero, axis=0) - zero
    one_pos = tl.load(one_start_ptr + pid) + tl.cumsum(one, axis=0) - one
    tl.store(out_ptr + tl.where(one == 1, one_pos, zero_pos), key, mask=mask)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    n = x.numel()
    blocks = triton.cdiv(n, BLOCK)
    bits = x.view(torch.int32)
    keys = bits ^ ((bits >> 31) | SIGN)  # float order -> unsigned order of the bits
    out = torch.empty_like(keys)
    sizes = torch.full((blocks,), BLOCK, device=x.device, dtype=torch.int64)
    sizes[-1] = n - (blocks - 1) * BLOCK
    zeros = torch.empty(blocks, device=x.device, dtype=torch.int32)
    for bit in range(32):
        count_zeros[(blocks,)](keys, zeros, n, bit, BLOCK=BLOCK)
        ones = sizes - zeros
        zero_start = torch.cumsum(zeros, 0) - zeros
        one_start = zeros.sum() + torch.cumsum(ones, 0) - ones
        split[(blocks,)](keys, out, zero_start, one_start, n, bit, BLOCK=BLOCK)
        keys, out = out, keys
    return (keys ^ (((keys >> 31) ^ -1) | SIGN)).view(torch.float32)
