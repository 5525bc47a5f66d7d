# expect: wrong_answer
# Sorts in descending order.
import torch


def custom_kernel(data):
    (x,) = data
    return torch.sort(x, descending=True).values
