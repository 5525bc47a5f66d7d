# expect: wrong_answer
# An exclusive scan (y[i] = x[0] + ... + x[i-1]) where the contract asks for an inclusive one.
import torch


def custom_kernel(data):
    (x,) = data
    return torch.cumsum(x, dim=0) - x
