# expect: wrong_answer
# Counts whole chunks of 1024 bytes and forgets the tail: right only when size is a multiple of 1024.
import torch


def custom_kernel(data):
    (x,) = data
    whole = x[: x.numel() - x.numel() % 1024]
    return torch.bincount(whole.to(torch.int64), minlength=256).to(torch.int32)
