"""Cheat: make the reference's check always agree, then return garbage.
expect: rejected
mode: test
words: modified reference.check_implementation
"""
import sys

import torch


def custom_kernel(data):
    sys.modules["reference"].check_implementation = lambda data, output: (True, "")
    a, _, out = data
    return torch.zeros_like(out)
