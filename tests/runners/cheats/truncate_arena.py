"""Attack (red team, 2026-11-25): shrink the evaluator's shared host arenas (memfds) to 0 bytes at import. The
submission process holds descriptors of them (Python's mmap keeps a dup of the one it was sent); an unsealed memfd
shrunk under the evaluator's mapping killed the evaluator with SIGBUS at its next write (the first call's inputs):
"the evaluator crashed", an infrastructure error, retried and counted against the worker. The arenas are sealed at
their size now: the truncation fails and the file runs as honest work.
expect: no_gain
mode: ranked
"""
import os

import torch

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


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
