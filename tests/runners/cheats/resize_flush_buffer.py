"""Cheat (GPU): shrink the harness's L2 flush buffer in place so the inputs stay in L2 between calls.
expect: rejected
mode: benchmark
device: cuda
words: flush buffer
"""
import gc

import torch


def custom_kernel(data):
    for obj in gc.get_objects():
        if type(obj).__name__ == "CudaTimer":
            obj._flush_buf.resize_(1)
    a, b, out = data
    return torch.add(a, b, out=out)
