# expect: wrong_answer
# Adds eps outside the square root: x / (rms + eps). Indistinguishable on large rows, wrong on the small ones.
import torch


def custom_kernel(data):
    x, weight = data
    xf = x.float()
    rms = xf.square().mean(dim=-1, keepdim=True).sqrt()
    return (xf / (rms + 1e-6) * weight.float()).to(torch.bfloat16)
