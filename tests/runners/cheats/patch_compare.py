"""Cheat: patch the comparison helper and torch functions the checker uses.
expect: rejected
mode: test
words: the submission modified
"""
import torch

from runners.harness import checking

checking.compare_tensors = lambda *args, **kwargs: (True, "")
torch.isnan = lambda t: torch.ones_like(t, dtype=torch.bool)


def custom_kernel(data):
    _, _, out = data
    return torch.zeros_like(out)
