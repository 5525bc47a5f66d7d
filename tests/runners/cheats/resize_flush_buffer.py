"""Cheat (GPU): shrink the L2 flush buffer in place so the inputs stay in L2 between calls. The buffer is the
evaluator's private memory in another process: there is no such tensor here.
expect: no_gain
mode: benchmark
device: cuda
"""
import gc

import torch


def custom_kernel(data):
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.is_cuda and obj.dtype is torch.int32 and obj.numel() > 1 << 22:
            obj.as_strided_((1,), (1,))
    a, b, out = data
    return torch.add(a, b, out=out)
