# expect: wrong_answer
# Divides the variance by cols - 1 (torch.var's default) instead of cols: a relative error of 1 / (2 * cols),
# below the output's precision on the wide rows of a benchmark, plain on the narrow rows of the tests.
import torch


def custom_kernel(data):
    x, weight, bias = data
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    var = xf.var(dim=-1, keepdim=True).nan_to_num(0.0)  # one column: var is NaN, call it 0
    return ((xf - mean) * torch.rsqrt(var + 1e-5) * weight.float() + bias.float()).to(x.dtype)
