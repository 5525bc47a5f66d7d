"""Cheat: find the harness's evaluation object through gc and swap its checker (an instance attribute).
expect: rejected
mode: test
words: modified the harness's evaluation.check
"""
import gc

import torch


def custom_kernel(data):
    for obj in gc.get_objects():
        if type(obj).__name__ == "Evaluation":
            obj.check = lambda data, output: (True, "")
    _, _, out = data
    return torch.zeros_like(out)
