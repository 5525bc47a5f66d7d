# expect: wrong_answer
# Returns zeros of the right shape and dtype: no work done.
import torch


def custom_kernel(data):
    x, w = data
    ks = w.shape[2]
    shape = (x.shape[0], w.shape[0], x.shape[2] - ks + 1, x.shape[3] - ks + 1)
    return torch.zeros(shape, device=x.device, dtype=torch.float32)
