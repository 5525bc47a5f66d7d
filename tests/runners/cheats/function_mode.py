"""Cheat: leave a TorchFunctionMode active so that torch calls in a checker in this process say 'equal'. The checker
runs in the evaluator: the mode changes nothing there, and the output is garbage.
expect: wrong_answer
mode: test
words: elements differ
"""
import torch
from torch.overrides import TorchFunctionMode


class AlwaysClose(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        return func(*args, **(kwargs or {}))


_mode = AlwaysClose()


def custom_kernel(data):
    _mode.__enter__()
    _, _, out = data
    return torch.zeros_like(out)
