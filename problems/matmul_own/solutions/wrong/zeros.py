# expect: wrong_answer
# Returns zeros of the right shape and dtype: no work done.
import torch


def custom_kernel(data):
    a, b = data
    return torch.zeros(a.shape[0], b.shape[1], device=a.device, dtype=torch.float16)
