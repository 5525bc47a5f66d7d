"""Cheat: return a tensor subclass that would compute the answer only when a checker touches it. The evaluator reads
the bytes where the output lies; nothing computes them.
expect: wrong_answer
mode: test
"""
import torch


class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def custom_kernel(data):
    a, b, out = data
    return out.as_subclass(Lazy)
