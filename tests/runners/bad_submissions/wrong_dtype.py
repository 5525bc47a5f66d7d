import torch


def custom_kernel(data):
    a, b, out = data
    return (a + b).to(torch.float64)
