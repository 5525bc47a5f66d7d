# expect: wrong_answer
# The one-pass variance E[x^2] - E[x]^2 in fp32 (one read of the row, as a fused kernel is tempted to do).
# Right on zero-mean data, which is all a weak checker tries; on rows far from zero the two terms cancel and the
# variance loses most of its digits (or goes negative).
import torch


def custom_kernel(data):
    x, weight, bias = data
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    var = (xf.square().mean(dim=-1, keepdim=True) - mean * mean).clamp(min=0)
    return ((xf - mean) * torch.rsqrt(var + 1e-5) * weight.float() + bias.float()).to(x.dtype)
