# expect: wrong_answer
# Skips the last element: a typical `i < n - 1` bound.
import torch


def custom_kernel(data):
    a, b, out = data
    flat_out = out.view(-1)
    flat_out[:-1] = (a.view(-1) + b.view(-1))[:-1]
    return out
