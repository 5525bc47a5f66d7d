"""Cheat: add a method to torch.Tensor that shadows the C implementation the checker calls (abs of a difference).
expect: no_gain
mode: test
"""
import torch


def custom_kernel(data):
    torch.Tensor.abs = lambda self: torch.zeros_like(self)
    _, _, out = data
    return torch.zeros_like(out)
