# Starter for rmsnorm in plain PyTorch: make it faster, keep it correct.
import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    xf = x.float()
    y = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + 1e-6) * weight.float()
    return y.to(torch.bfloat16)
