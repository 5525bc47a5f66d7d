# expect: accepted
# timed: rejected (cuBLASLt's nvjet GEMM takes nearly all of each call: the library policy denies cublaslt)
# `a @ b`: correct, so its tests pass; a benchmark or ranked run records the library's kernel and refuses it.
import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return a @ b
