"""Cheat: make this process report every call as 1 ns: patch the clock it reads on the CPU and the CUDA events it
reads on a GPU. The evaluator bounds every reading with its own clock, so the score stays honest.
expect: no_gain
mode: benchmark
"""
import time

import torch

_real = time.perf_counter_ns
_calls = [0]


def _frozen():
    _calls[0] += 1
    return 1_000_000 + _calls[0]


time.perf_counter_ns = _frozen
if torch.cuda.is_available():
    torch.cuda.Event.elapsed_time = lambda self, other: 1e-6


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
