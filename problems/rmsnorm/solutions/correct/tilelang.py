# expect: accepted
# lang: tilelang
# One block per row: a first pass sums x^2 in fp32 over chunks of the row, a block reduction gives the row's
# 1/rms, a second pass writes x * (1/rms) * weight. Compiled once per (rows, hidden) shape, at its first call.
import functools

import tilelang
import tilelang.language as T
import torch

EPS = 1e-6
CHUNK = 1024
THREADS = 128


@functools.cache
def rmsnorm_kernel(rows: int, hidden: int) -> object:
    @tilelang.jit(out_idx=[-1])
    def build(rows: int, hidden: int):
        chunks = T.ceildiv(hidden, CHUNK)

        @T.prim_func
        def main(
            X: T.Tensor((rows, hidden), "bfloat16"),
            W: T.Tensor((hidden,), "bfloat16"),
            Y: T.Tensor((rows, hidden), "bfloat16"),
        ):
            with T.Kernel(rows, threads=THREADS) as row:
                squares = T.alloc_fragment((1, CHUNK), "float32")
                total = T.alloc_fragment((1,), "float32")
                T.clear(squares)
                for c in T.serial(chunks):
                    for i, j in T.Parallel(1, CHUNK):
                        col = c * CHUNK + j
                        value = T.if_then_else(col < hidden, T.cast(X[row, col], "float32"), 0.0)
                        squares[i, j] += value * value
                T.reduce_sum(squares, total, dim=1)
                for i in T.Parallel(1):
                    total[i] = T.rsqrt(total[i] / hidden + EPS)
                for c in T.serial(chunks):
                    for i, j in T.Parallel(1, CHUNK):
                        col = c * CHUNK + j
                        if col < hidden:
                            scaled = T.cast(X[row, col], "float32") * total[i] * T.cast(W[col], "float32")
                            Y[row, col] = T.cast(scaled, "bfloat16")

        return main

    return build(rows, hidden)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    rows, hidden = x.shape
    return rmsnorm_kernel(rows, hidden)(x, weight)
