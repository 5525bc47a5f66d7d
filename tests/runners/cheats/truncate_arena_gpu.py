"""Attack (red team, 2026-11-25), the GPU form of truncate_arena.py: a CUDA run creates and shares the host arenas
too, and an output may name one (a CPU tensor comes back through the host output arena). Shrink host_out, then name
4 KiB of it as the output: the evaluator's copy of the output would die of SIGBUS (an infrastructure error). Sealed
arenas refuse the truncation; the output then reads the arena's bytes, not the sum.
expect: wrong_answer
mode: test
device: cuda
"""
import os

import torch

from runners.ipc.protocol import Enqueued, TensorRef
from runners.submission import serve

for fd in range(3, 256):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    if target.startswith("/memfd:kernelcup-"):
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass  # sealed

_call = serve.SubmissionProcess.call_cuda


def _call_cuda(self, msg):
    got = _call(self, msg)  # queues the honest work and "done"
    ref = TensorRef(arena="host_out", offset=0, dtype="float32", shape=[1024], stride=[1])
    return Enqueued(k=got.k, outputs=[ref] * len(got.outputs), error=got.error, host_ns=got.host_ns)


serve.SubmissionProcess.call_cuda = _call_cuda


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
