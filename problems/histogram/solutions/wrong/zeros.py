# expect: wrong_answer
# Counts nothing.
import torch


def custom_kernel(data):
    return torch.zeros(256, device=data[0].device, dtype=torch.int32)
