# expect: wrong_answer
# Sorts each block of 1024 values but never merges the blocks: right only for size <= 1024.
import torch
import torch.nn.functional as F


def custom_kernel(data):
    (x,) = data
    n = x.numel()
    padded = F.pad(x, (0, -n % 1024), value=float("inf")).view(-1, 1024)
    return torch.sort(padded, dim=1).values.flatten()[:n].contiguous()
