"""Cheat: make the clock stand still (time.perf_counter_ns) so wall-clock samples read as zero.
expect: rejected
mode: benchmark
words: modified time.perf_counter
"""
import time

import torch

time.perf_counter_ns = lambda: 0
time.perf_counter = lambda: 0.0


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
