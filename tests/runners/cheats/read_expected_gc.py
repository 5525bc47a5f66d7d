"""Cheat: look through gc and the callers' frames for the expected output and return it.
expect: wrong_answer
mode: test
"""
import gc
import sys

import torch


def custom_kernel(data):
    a, b, out = data
    found = None
    frame = sys._getframe(1)
    while frame is not None and found is None:
        for name, value in frame.f_locals.items():
            if "expect" in name and isinstance(value, torch.Tensor) and value.shape == out.shape:
                found = value
        frame = frame.f_back
    if found is None:
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj.shape == out.shape and obj is not a and obj is not b:
                if obj is not out:
                    found = obj
                    break
    return found.clone() if found is not None else torch.zeros_like(out)
