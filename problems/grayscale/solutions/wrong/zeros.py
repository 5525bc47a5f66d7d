# expect: wrong_answer
# Returns zeros of the right shape and type: no work done.
import torch


def custom_kernel(data):
    (image,) = data
    return torch.zeros(image.shape[:2], device=image.device, dtype=image.dtype)
