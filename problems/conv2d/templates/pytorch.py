# Starter for conv2d in plain PyTorch: make it faster, keep it correct.
import torch
import torch.nn.functional as F


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, w = data
    return F.conv2d(x, w)
