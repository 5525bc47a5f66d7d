"""Cheat: patch the comparison helper and the torch functions a checker uses. The checker runs in the evaluator,
another process: the patches change this process only.
expect: wrong_answer
mode: test
words: elements differ
"""
import torch

from runners.oracle import checking

checking.compare_tensors = lambda *args, **kwargs: (True, "")
checking.normalise_check = lambda result: (True, "")
torch.isnan = lambda t: torch.ones_like(t, dtype=torch.bool)


def custom_kernel(data):
    _, _, out = data
    return torch.zeros_like(out)
