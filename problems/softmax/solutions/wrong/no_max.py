# expect: wrong_answer
# Forgets to subtract the row maximum: exp() overflows fp32 for the rows offset by more than ~88.
import torch


def custom_kernel(data):
    (x,) = data
    e = x.float().exp()
    return (e / e.sum(dim=-1, keepdim=True)).to(torch.float16)
