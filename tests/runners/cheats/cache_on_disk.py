"""Cheat: keep outputs in files keyed by size (works across calls, and across runs if the folder survived).
expect: slow_or_wrong
mode: ranked
"""
import os
import tempfile
import time

import torch

_dir = os.path.join(tempfile.gettempdir(), "kc-cheat-cache")
os.makedirs(_dir, exist_ok=True)


def custom_kernel(data):
    a, b, out = data
    path = os.path.join(_dir, f"{out.numel()}.pt")
    if os.path.exists(path):
        return out.copy_(torch.load(path))
    time.sleep(0.02)
    result = torch.add(a, b, out=out)
    torch.save(result.cpu(), path)
    return result
