# expect: wrong_answer
# Returns zeros of the right shape and dtype: no work done.
import torch


def custom_kernel(data):
    return torch.zeros_like(data[0])
