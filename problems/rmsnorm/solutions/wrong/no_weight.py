# expect: wrong_answer
# Normalises but forgets to multiply by the weight.
import torch


def custom_kernel(data):
    x, _ = data
    xf = x.float()
    return (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + 1e-6)).to(torch.bfloat16)
