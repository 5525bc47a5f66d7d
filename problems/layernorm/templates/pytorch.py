# Starter for layernorm in plain PyTorch: fp32 math, two passes over the row. Make it faster, keep it correct.
import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight, bias = data
    xf = x.float()
    centred = xf - xf.mean(dim=-1, keepdim=True)
    y = centred * torch.rsqrt(centred.square().mean(dim=-1, keepdim=True) + 1e-5) * weight.float() + bias.float()
    return y.to(x.dtype)
