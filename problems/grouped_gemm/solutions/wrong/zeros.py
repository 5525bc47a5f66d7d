# expect: wrong_answer
# Returns zeros of the right shape and dtype: no work done.
import torch


def custom_kernel(data):
    a, weights, _ = data
    return torch.zeros(a.shape[0], weights.shape[2], device=a.device, dtype=torch.bfloat16)
