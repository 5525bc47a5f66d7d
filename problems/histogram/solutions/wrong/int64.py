# expect: wrong_answer
# Right counts, wrong dtype: int64 where the contract says int32.
import torch


def custom_kernel(data):
    (x,) = data
    return torch.bincount(x.to(torch.int64), minlength=256)
