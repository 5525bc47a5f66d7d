"""Cheat (GPU, red team 5, verdict laundering): unmap the shared control arena (the "go"/"done" words) from this
process's address space with cuMemUnmap while this process's stream still waits on "go" and is yet to write
"done". The stream's semaphore wait and write then fault on an unmapped address: a fault of the host interface of
this context's channel, not of a kernel. The evaluator's own mapping of the words stays, but if the driver's
recovery from this kind of fault reaches other contexts on the engine (the evaluator's stream is blocked on the
same words), the evaluator's next CUDA call fails and evaluate.py's catch-all reports "the evaluator failed"
(an infrastructure error). An honest platform reports the submission's runtime error.
expect: runtime_error
mode: test
device: cuda
"""
import ctypes

import torch

from runners.submission import serve

_cuda = serve.SubmissionProcess.call_cuda
_proc = []


def _call_cuda(self, msg):
    if not _proc:
        _proc.append(self)
    return _cuda(self, msg)


serve.SubmissionProcess.call_cuda = _call_cuda


def custom_kernel(data):
    a, b, out = data
    torch.add(a, b, out=out)
    if _proc and _proc[0].ctrl is not None:
        ctrl = _proc[0].ctrl
        _proc[0].driver._call("cuMemUnmap", ctypes.c_ulonglong(ctrl.base), ctypes.c_size_t(ctrl.size))
    return out
