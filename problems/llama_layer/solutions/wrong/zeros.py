# expect: wrong_answer
# Does no work: an output of zeros.
import torch


def custom_kernel(data: tuple[torch.Tensor, ...]) -> torch.Tensor:
    return torch.zeros_like(data[0])
