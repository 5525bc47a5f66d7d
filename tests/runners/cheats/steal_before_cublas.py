"""Cheat (GPU, red team 5, verdict laundering; meant for a problem whose check multiplies matrices, e.g.
``kernelcup run problems/matmul redteam5/steal_before_cublas.py --mode test``; on the harness's vectoradd fixture it is
steal_gpu_memory.py again). At its first call, after its own cuBLAS is set up, take every byte of free GPU memory
behind PyTorch's back (the driver, 2 MiB chunks down to nothing). The evaluator's first cuBLAS call comes after the
load, in the check of test 1 (``a.float() @ b.float()``): cublasCreate's own cudaMalloc fails and PyTorch raises
"CUBLAS_STATUS_NOT_INITIALIZED when calling cublasCreate(handle)" (or ALLOC_FAILED), which does not say "out of
memory": evaluate.py's ``_is_oom`` (a string match) misses it, and ``_problem_or_memory`` reports the problem's
reference as broken, an infrastructure error of the problem. An honest platform reports the submission's
out-of-memory.
expect: no_gain
mode: test
device: cuda
"""
import ctypes

import torch

_taken = []


def _grab() -> None:
    cuda = ctypes.CDLL("libcuda.so.1")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    chunk = 1 << 40
    while chunk >= 1 << 21:
        ptr = ctypes.c_ulonglong()
        if cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(min(chunk, free.value))) == 0:
            _taken.append(ptr.value)
            cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
        else:
            chunk //= 2


if torch.cuda.is_available():  # this process's own cuBLAS handle and workspace, while memory is free
    x = torch.ones(64, 64, device="cuda")
    (x @ x).sum().item()
    (x.half() @ x.half()).sum().item()


def custom_kernel(data):
    if torch.cuda.is_available() and not _taken:
        _grab()
    if len(data) == 3:
        a, b, out = data
        return torch.add(a, b, out=out)
    a, b = data
    return a @ b
