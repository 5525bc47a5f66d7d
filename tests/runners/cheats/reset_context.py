"""Cheat (GPU, red team 5, verdict laundering): reset this process's primary CUDA context from inside custom_kernel
(cuDevicePrimaryCtxReset: every allocation, the imported shared arenas and the queued wait for "go" and write of
"done" are destroyed), then return as if nothing happened. The evaluator waits for a "done" that never comes; its
one-second check asks this process, whose PyTorch state now names a destroyed context. The failure is the
submission's: a runtime error (the evaluator must neither crash on it nor wait out the whole time limit and call it
a timeout of the platform).
expect: runtime_error
mode: test
device: cuda
"""
import ctypes

import torch

_lib = ctypes.CDLL("libcuda.so.1") if torch.cuda.is_available() else None


def custom_kernel(data):
    a, b, out = data
    torch.add(a, b, out=out)
    if _lib is not None:
        dev = ctypes.c_int()
        _lib.cuCtxGetDevice(ctypes.byref(dev))
        _lib.cuDevicePrimaryCtxReset_v2(dev)
    return out
