"""Cheat (GPU, the timed twin of reset_context): inside a timed call, enqueue the add, then reset this process's
primary CUDA context (cuDevicePrimaryCtxReset) before returning, hoping that the reset throws away the queued wait for
"go" and the work while the "done" written afterwards lands at once, closing the evaluator's window early. Every
output is checked against the reference and the window is the evaluator's, so this gains nothing: a runtime error, a
wrong answer, or an honest time. (Written 2026-11-28 after reset_context, the test-mode cheat, turned from a runtime
error to a correct acceptance on the lent H200; passed on the lent H200 on 2026-11-29.)
expect: no_gain
mode: benchmark
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
