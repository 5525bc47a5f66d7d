# expect: accepted
# lang: cute-dsl
# Each thread adds VEC = 8 neighbouring fp16 values of the flattened matrices: one 16-byte load of each input and one
# 16-byte store (the tensors are divided into VEC-element pieces with cute.zipped_divide; a thread takes one piece).
# The last n % VEC elements, if any, go to a one-value-a-thread kernel. Inputs whose addresses are not 16-byte
# aligned take VEC = 1. Compiled by cute.compile once per (size, alignment), at the first call (untimed); later calls
# run the compiled kernels on PyTorch's current stream.
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack

THREADS = 256
VEC = 8  # fp16 values a thread: 16 bytes


@cute.kernel
def _add_pieces(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor, pieces: cutlass.Constexpr):
    """a, b, out divided into pieces: ((vec), (pieces)). Thread i of the grid adds piece i."""
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < pieces:
        piece = (None, i)
        out[piece].store(a[piece].load() + b[piece].load())


@cute.kernel
def _add_tail(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor, start: cutlass.Constexpr, n: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    i = start + tidx
    if i < n:
        out[i] = a[i] + b[i]


@cute.jit
def _add(
    a: cute.Tensor,
    b: cute.Tensor,
    out: cute.Tensor,
    n: cutlass.Constexpr,
    vec: cutlass.Constexpr,
    stream: cuda.CUstream,
):
    pieces = n // vec
    if pieces > 0:
        blocks = (pieces + THREADS - 1) // THREADS
        a_p, b_p, out_p = (cute.zipped_divide(t, (vec,)) for t in (a, b, out))
        _add_pieces(a_p, b_p, out_p, pieces).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)
    if n % vec:
        _add_tail(a, b, out, pieces * vec, n).launch(grid=(1, 1, 1), block=(THREADS, 1, 1), stream=stream)


_compiled: dict[tuple[int, int], object] = {}


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    n = a.numel()
    flat = [t.view(-1) for t in (a, b, out)]
    vec = VEC if all(t.data_ptr() % 16 == 0 for t in flat) else 1
    args = [from_dlpack(t, assumed_align=2 * vec) for t in flat]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    if (n, vec) not in _compiled:
        _compiled[(n, vec)] = cute.compile(_add, *args, n, vec, stream)
    _compiled[(n, vec)](*args, stream)
    return out
