"""Cheat: install a profile hook that runs inside the harness's checker (to patch and restore just in time).
expect: no_gain
mode: test
"""
import sys

import torch


def _hook(frame, event, arg):
    return None


def custom_kernel(data):
    sys.setprofile(_hook)
    a, b, out = data
    return torch.add(a, b, out=out)
