# expect: accepted
# lang: cute-dsl
# A plain SIMT matmul in CuTe DSL: one thread per element of c, a 16x16 block of threads per 16x16 tile of c, each
# thread summing its row of a times its column of b in fp32 and rounding once to fp16. Correct for every size
# (bounds checked), far from the tensor cores' speed: a starting point, not a contender.
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack

TILE = 16


@cute.kernel
def _matmul_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, m: cutlass.Int32, n: cutlass.Int32,
                   k: cutlass.Int32):  # fmt: skip
    tx, ty, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    row = by * TILE + ty
    col = bx * TILE + tx
    if row < m:  # noqa: SIM102 (one condition per if: device values)
        if col < n:
            acc = cutlass.Float32(0.0)
            for kk in cutlass.range(k):
                acc += a[row, kk].to(cutlass.Float32) * b[kk, col].to(cutlass.Float32)
            c[row, col] = acc.to(cutlass.Float16)


@cute.jit
def _matmul(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32,
            stream: cuda.CUstream):  # fmt: skip
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE, 1)
    _matmul_kernel(a, b, c, m, n, k).launch(grid=grid, block=(TILE, TILE, 1), stream=stream)


_compiled: dict[tuple[int, int, int], object] = {}


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), dtype=torch.float16, device=a.device)
    args = [from_dlpack(t) for t in (a, b, c)]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    if (m, n, k) not in _compiled:
        _compiled[m, n, k] = cute.compile(_matmul, *args, m, n, k, stream)
    _compiled[m, n, k](*args, m, n, k, stream)
    return c
