# expect: wrong_answer
# lang: cute-dsl
# Launches one block too few when the size is no multiple of 256: the last elements keep their NaN.
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def _add_kernel(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 256 + tidx
    if i < n:
        out[i] = a[i] + b[i]


@cute.jit
def _add(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    _add_kernel(a, b, out, n).launch(grid=(n // 256, 1, 1), block=(256, 1, 1), stream=stream)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    n = a.numel()
    if n < 256:
        out.copy_(a + b)  # a grid of zero blocks is no launch at all: the small cases pass, the others do not
        return out
    args = [from_dlpack(t.view(-1)) for t in (a, b, out)]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    cute.compile(_add, *args, n, stream)(*args, n, stream)
    return out
