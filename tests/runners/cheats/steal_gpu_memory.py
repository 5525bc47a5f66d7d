"""Cheat (GPU): take nearly all free GPU memory behind PyTorch's back (the driver directly), so that the evaluator
runs out of memory preparing or checking a call, hoping that reads as the platform's failure. Once the file is
loaded, the evaluator running out of GPU memory is the submission's doing (an out-of-memory verdict), and an
evaluator that still has what it needs scores the run honestly.
expect: no_gain
mode: ranked
device: cuda
"""
import ctypes

import torch

_taken = []


def _grab() -> None:
    cuda = ctypes.CDLL("libcuda.so.1")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    ptr = ctypes.c_ulonglong()
    if cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(free.value - (64 << 20), 0))) == 0:
        _taken.append(ptr.value)


def custom_kernel(data):
    if not _taken:
        _grab()
    a, b, out = data
    return torch.add(a, b, out=out)
