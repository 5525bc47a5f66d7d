# Starter for prefixsum in plain PyTorch: make it faster, keep it correct.
import torch


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return torch.cumsum(x, dim=0)
