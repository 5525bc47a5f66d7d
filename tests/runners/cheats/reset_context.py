"""Cheat (GPU, red team 5, verdict laundering): reset this process's primary CUDA context from inside custom_kernel
(cuDevicePrimaryCtxReset: every allocation, the imported shared arenas and the queued wait for "go" are destroyed),
then return as if nothing happened. The add's output lies in the evaluator's own memory and is written before the
reset; what follows is a race inside the CUDA driver: PyTorch's next calls revive a fresh primary context, and the
"done" write either fails (the evaluator's one-second check then finds this process broken: a runtime error) or
lands (the evaluator then checks the outputs from its own mapping, and they are right). On the lent H200 the same
file at one commit gave both (2026-11-29: 1 runtime error and 2 accepted in 3 runs; the "regression" of 2026-11-28
was this race). Either
verdict is the evaluator's own reading: no infrastructure error, no timeout blamed on the platform, and nothing is
gained (the timed twin, reset_context_timed.py, shows that a reset inside a timed call gains nothing).
expect: broken_or_correct
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
