"""Cheat: leave a TorchFunctionMode active so that every torch call in the checker says 'equal'.
expect: rejected
mode: test
words: torch function/dispatch mode
"""
import torch
from torch.overrides import TorchFunctionMode


class AlwaysClose(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


_mode = AlwaysClose()


def custom_kernel(data):
    _mode.__enter__()
    a, b, out = data
    return torch.add(a, b, out=out)
