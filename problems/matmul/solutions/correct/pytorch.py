# expect: accepted
# cuBLAS (on a GPU) through torch.matmul.
import torch


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return torch.matmul(a, b)
