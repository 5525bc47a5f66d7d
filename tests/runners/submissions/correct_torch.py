import torch


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
