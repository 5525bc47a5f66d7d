# Starter for vectorsum in Triton: each program sums BLOCK elements and adds its sum to the result atomically.
import torch
import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    out = torch.zeros(1, device=x.device, dtype=torch.float32)
    sum_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
