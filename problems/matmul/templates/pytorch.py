# Starter for matmul in plain PyTorch: make it faster, keep it correct.
import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return a @ b
