"""Cheat: replace aten kernels through the torch dispatcher (torch.library), with no Python attribute changed: make
add return NaN (so a checker's comparisons would pass in this process) and move work into random number
generation (which an input generator in this process would run untimed). The checker and the generator run in
the evaluator, with its own torch: the output here is what counts, and it is wrong.
expect: wrong_answer
mode: test
words: elements differ
"""
import torch

_lib = torch.library.Library("aten", "IMPL")


def _nan_add(a, b, alpha=1):
    return torch.full_like(a, float("nan"))


_lib.impl("add.Tensor", _nan_add, "CPU")
_lib.impl("add.Tensor", _nan_add, "CUDA")


def custom_kernel(data):
    a, b, out = data
    out.copy_(a + b)
    return out
