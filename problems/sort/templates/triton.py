# Starter for sort in Triton: tl.sort sorts one block in registers. This starter only works for size <= 65536
# (one program sorts everything); a real solution sorts blocks and merges them, or does a radix sort.
import torch
import triton
import triton.language as tl


@triton.jit
def sort_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=float("inf"))
    tl.store(out_ptr + offsets, tl.sort(x), mask=offsets < n)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    n = x.numel()
    if n > 65536:
        return torch.sort(x).values  # replace with a multi-block sort
    out = torch.empty_like(x)
    sort_kernel[(1,)](x, out, n, BLOCK=max(triton.next_power_of_2(n), 2))
    return out
