# Starter for softmax in plain PyTorch: make it faster, keep it correct.
import torch


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return torch.softmax(x.float(), dim=-1).to(torch.float16)
