"""Timing statistics and the ranking score, computed in the trusted parent from raw samples."""

from __future__ import annotations

import math
from collections.abc import Sequence

from runners.contract import RankingRule, TimingStats


def quantile(sorted_xs: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly between the two nearest (numpy's default)."""
    position = q * (len(sorted_xs) - 1)
    below = math.floor(position)
    above = min(below + 1, len(sorted_xs) - 1)
    return sorted_xs[below] + (sorted_xs[above] - sorted_xs[below]) * (position - below)


def timing_stats(samples_ns: Sequence[float]) -> TimingStats:
    """Median, quartiles, mean, sample std, standard error of the mean, min and max, all in ns."""
    xs = sorted(float(x) for x in samples_ns)
    n = len(xs)
    if n == 0:
        raise ValueError("no samples")
    if any(not math.isfinite(x) or x < 0 for x in xs):
        raise ValueError("samples must be finite and non-negative")
    median = quantile(xs, 0.5)
    mean = math.fsum(xs) / n
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return TimingStats(
        samples=n,
        median_ns=median,
        mean_ns=mean,
        std_ns=std,
        stderr_ns=std / math.sqrt(n),
        min_ns=xs[0],
        max_ns=xs[-1],
        p25_ns=quantile(xs, 0.25),
        p75_ns=quantile(xs, 0.75),
    )


def median_error(median: float, p25: float, p75: float, n: int) -> float:
    """The standard error of a median of ``n`` samples, relative to it: sqrt(pi/2) x sigma / sqrt(n), sigma estimated
    from the interquartile range (IQR / 1.349), so that a few outliers (a context switch, a clock change) do not
    count as they do in the mean's error. 0 for a median of 0."""
    if median <= 0 or n < 1:
        return 0.0
    return math.sqrt(math.pi / 2) * (p75 - p25) / 1.349 / math.sqrt(n) / median


def stats_error(stats: TimingStats) -> float | None:
    """``median_error`` of a case's statistics (None for statistics kept before the quartiles were)."""
    if stats.p25_ns is None or stats.p75_ns is None:
        return None
    return median_error(stats.median_ns, stats.p25_ns, stats.p75_ns, stats.samples)


def geometric_mean(xs: Sequence[float]) -> float:
    """The geometric mean of positive values (one below 1e-9 counts as 1e-9)."""
    return math.exp(math.fsum(math.log(max(x, 1e-9)) for x in xs) / len(xs))


def score(medians_ns: Sequence[float], rule: RankingRule) -> float | None:
    """One number per run (lower is better) from the per-benchmark medians, under the problem's rule."""
    if not medians_ns:
        return None
    if rule is RankingRule.LAST:
        return float(medians_ns[-1])
    if rule is RankingRule.MEAN:
        return math.fsum(medians_ns) / len(medians_ns)
    return geometric_mean(medians_ns)
