# expect: accepted
import torch


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return torch.cumsum(x, dim=0)
