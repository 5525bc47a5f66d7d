"""Cheat (GPU): between the tests and the benchmarks the evaluator starts its calibration echo (a process with a CUDA
context of its own) and makes its arenas. While no call comes (that pause), take nearly all free GPU memory behind
PyTorch's back, and give it back as soon as the next call arrives, so that this process's own work never runs short.
If the echo or its arenas cannot get memory, the calibration fails; that must not read as the platform's failure
(an infrastructure error is retried, so every ranked run of such a file would be, again and again).
On the lent H100 (ranked and benchmark mode): "the runner failed: calibrating the evaluator's clock failed:
cuMemCreate failed: out of memory (2)" and "...: the calibration echo exited", both infrastructure errors.
expect: no_gain
mode: ranked
device: cuda
"""
import ctypes
import threading
import time

import torch

from runners.submission import serve

_cuda = ctypes.CDLL("libcuda.so.1")
_taken = []
_lock = threading.Lock()
_last_call = [time.monotonic()]
_call_cuda = serve.SubmissionProcess.call_cuda


def _give_back():
    with _lock:
        while _taken:
            _cuda.cuMemFree_v2(ctypes.c_ulonglong(_taken.pop()))


def _call(self, msg):
    _give_back()
    _last_call[0] = time.monotonic()
    return _call_cuda(self, msg)


def _starve():
    torch.cuda.set_device(0)
    torch.cuda.synchronize()  # the primary context current in this thread too (driver calls below)
    while True:
        time.sleep(0.002)
        if time.monotonic() - _last_call[0] > 0.02:
            with _lock:
                free, total = ctypes.c_size_t(), ctypes.c_size_t()
                _cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
                ptr = ctypes.c_ulonglong()
                size = free.value - (16 << 20)
                if size > (64 << 20) and _cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)) == 0:
                    _taken.append(ptr.value)


serve.SubmissionProcess.call_cuda = _call
threading.Thread(target=_starve, daemon=True).start()


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
