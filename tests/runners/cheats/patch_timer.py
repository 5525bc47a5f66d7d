"""Cheat: replace the harness's timer so every timed call reads as 1 ns.
expect: rejected
mode: benchmark
words: modified runners.harness.timing
"""
import torch

from runners.harness import timing


def _fake_measure(self, fn, data):
    return fn(data), 1.0, 0.0


def custom_kernel(data):
    timing.CpuTimer.measure = _fake_measure
    timing.CudaTimer.measure = _fake_measure
    a, b, out = data
    return torch.add(a, b, out=out)
