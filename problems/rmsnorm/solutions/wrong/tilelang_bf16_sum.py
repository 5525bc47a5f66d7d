# expect: wrong_answer
# lang: tilelang
# Sums the squares in bf16: 8 bits of mantissa lose most of a long row's sum, so 1/rms is off by far more than the
# check's 2**-8.
import functools

import tilelang
import tilelang.language as T
import torch


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
            with T.Kernel(rows, threads=32) as row:
                total = T.alloc_local((1,), "bfloat16")
                total[0] = T.cast(0, "bfloat16")
                for col in T.serial(hidden):
                    total[0] = total[0] + X[row, col] * X[row, col]
                for col in T.serial(hidden):
                    rms = T.rsqrt(T.cast(total[0], "float32") / hidden + 1e-6)
                    Y[row, col] = T.cast(T.cast(X[row, col], "float32") * rms * T.cast(W[col], "float32"), "bfloat16")

        return main

    return build(rows, hidden)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    rows, hidden = x.shape
    return rmsnorm_kernel(rows, hidden)(x, weight)
