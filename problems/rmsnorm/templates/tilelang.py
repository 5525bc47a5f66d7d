# Starter for rmsnorm in TileLang (https://github.com/tile-ai/tilelang): one block per row, the row in chunks of
# CHUNK columns (a fragment spread over the block's threads), a block reduction for sum(x^2). A kernel is compiled
# for each (rows, hidden) at its first call, which is never timed.
import functools

import tilelang
import tilelang.language as T
import torch

CHUNK = 512


@functools.cache
def rmsnorm_kernel(rows: int, hidden: int) -> object:
    @tilelang.jit(out_idx=[-1])
    def build(rows: int, hidden: int):
        @T.prim_func
        def main(
            X: T.Tensor((rows, hidden), "bfloat16"),
            W: T.Tensor((hidden,), "bfloat16"),
            Y: T.Tensor((rows, hidden), "bfloat16"),
        ):
            with T.Kernel(rows, threads=128) as row:
                acc = T.alloc_fragment((1, CHUNK), "float32")
                rstd = T.alloc_fragment((1,), "float32")
                T.clear(acc)
                for c in T.serial(T.ceildiv(hidden, CHUNK)):
                    for i, j in T.Parallel(1, CHUNK):
                        x = T.if_then_else(c * CHUNK + j < hidden, T.cast(X[row, c * CHUNK + j], "float32"), 0.0)
                        acc[i, j] += x * x
                T.reduce_sum(acc, rstd, dim=1)
                for i in T.Parallel(1):
                    rstd[i] = T.rsqrt(rstd[i] / hidden + 1e-6)
                for c in T.serial(T.ceildiv(hidden, CHUNK)):
                    for i, j in T.Parallel(1, CHUNK):
                        if c * CHUNK + j < hidden:
                            y = T.cast(X[row, c * CHUNK + j], "float32") * rstd[i] * T.cast(W[c * CHUNK + j], "float32")
                            Y[row, c * CHUNK + j] = T.cast(y, "bfloat16")

        return main

    return build(rows, hidden)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    return rmsnorm_kernel(*x.shape)(x, weight)
