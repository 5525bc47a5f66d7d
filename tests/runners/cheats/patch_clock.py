"""Cheat: make the clock stand still (time.perf_counter_ns) so the readings of this process are zero; then do the
work slowly (the evaluator's own clock sees it).
expect: no_gain
mode: benchmark
"""
import time

import torch

time.perf_counter_ns = lambda: 0


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
