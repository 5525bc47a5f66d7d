# expect: wrong_answer
# Scans in fp16.
import torch


def custom_kernel(data):
    (x,) = data
    return torch.cumsum(x.half(), dim=0).float()
