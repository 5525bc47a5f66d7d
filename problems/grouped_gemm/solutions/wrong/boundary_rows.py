# expect: wrong_answer
# Finds each row's group with searchsorted(offsets, row) without right=True: the first row of every group (a row
# index equal to the previous group's end) is given to the previous group, and after an empty group to the empty
# one. Every other row is right, so a checker that samples rows or compares a mean error can miss it.
import torch


def custom_kernel(data):
    a, weights, offsets = data
    rows = torch.arange(a.shape[0], device=a.device, dtype=offsets.dtype)
    group = torch.searchsorted(offsets, rows).clamp_(max=weights.shape[0] - 1)
    return torch.bmm(a.float().unsqueeze(1), weights.float()[group]).squeeze(1).to(torch.bfloat16)
