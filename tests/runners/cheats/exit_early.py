"""Cheat: exit with status 0 in the middle of the tests, hoping a clean exit reads as success.
expect: runtime_error
mode: test
words: exited with code 0
"""
import os

import torch


def custom_kernel(data):
    a, b, out = data
    if out.numel() > 5:
        os._exit(0)
    return torch.add(a, b, out=out)
