"""Cheat: kill its own process with SIGKILL in the middle of the benchmark (as an outside OOM killer would), hoping
to be retried as an infrastructure failure.
expect: runtime_error
mode: benchmark
words: crashed
"""
import os
import signal

import torch

_calls = [0]


def custom_kernel(data):
    _calls[0] += 1
    if _calls[0] > 3:
        os.kill(os.getpid(), signal.SIGKILL)
    a, b, out = data
    return torch.add(a, b, out=out)
