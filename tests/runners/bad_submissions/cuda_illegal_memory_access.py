import torch
import triton
import triton.language as tl


@triton.jit
def _bad_store(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # No mask and a huge stride: stores far outside the allocation -> illegal memory access.
    tl.store(out_ptr + offs * 1_000_000_000, tl.zeros([BLOCK], dtype=tl.float32))


def custom_kernel(data):
    a, b, out = data
    _bad_store[(triton.cdiv(out.numel(), 128),)](out, out.numel(), BLOCK=128)
    torch.cuda.synchronize()
    return out
