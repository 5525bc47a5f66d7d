"""Cheat: patch the statistics so the median reads 1 ns. They are computed in the trusted parent from raw samples,
so the patch changes nothing: the score is the honest one.
expect: honest_score
mode: benchmark
"""
import torch

from runners.harness import stats

stats.timing_stats = lambda samples: stats.TimingStats(
    samples=len(samples), median_ns=1, mean_ns=1, std_ns=0, stderr_ns=0, min_ns=1, max_ns=1
)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
