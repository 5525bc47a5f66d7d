"""Cheat: patch the statistics and the sample rule so every median reads 1 ns. They run in the trusted parent and
the evaluator, other processes: the score is the honest one.
expect: no_gain
mode: benchmark
"""
import torch

from runners import stats
from runners.oracle import timing

stats.timing_stats = lambda samples: stats.TimingStats(
    samples=len(samples), median_ns=1, mean_ns=1, std_ns=0, stderr_ns=0, min_ns=1, max_ns=1
)
timing.sample_of = lambda *args, **kwargs: timing.Sample(1.0, 1.0, False, False)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
