import triton
import triton.language as tl


@triton.jit
def _bad_store(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # No mask and a huge stride: stores far outside the allocation -> illegal memory access.
    tl.store(out_ptr + offs * 1_000_000_000, tl.zeros([BLOCK], dtype=tl.float32))


def custom_kernel(data):
    # The kernel faults and nothing here waits for it: the fault surfaces only on the GPU, where the "done" queued
    # behind it never comes. The evaluator must learn of it from the process, not wait out the time limit.
    a, b, out = data
    _bad_store[(triton.cdiv(out.numel(), 128),)](out, out.numel(), BLOCK=128)
    return out
