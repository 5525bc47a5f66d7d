"""Cheat: return a tensor subclass that computes the answer only when the checker touches it.
expect: rejected
mode: test
words: subclass of torch.Tensor
"""
import torch


class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def custom_kernel(data):
    a, b, out = data
    return out.as_subclass(Lazy)
