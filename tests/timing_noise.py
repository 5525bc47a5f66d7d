"""A model of the GPU harness's timing noise, for simulation tests of the compare and the ranked score.

What it draws, per run (one fresh process pair) and per case, from what docs/measurement.md measured on the lent
H100 and issue 28 reported:

- **The process offset**: every evaluation's median of a case sits off the case's true time by an amount of its own,
  about 0.2 µs whatever the case's size (sd 1.9–2.2% of a 9 µs case, 0.2% of 127 µs, 0.05–0.07% of 520 µs), and
  clustered (the 9 µs case's medians gathered near 8.9 and 9.25 µs): here a cluster of ±``cluster_ns`` (each run
  lands in one at random) plus a normal ``offset_ns`` and a relative ``offset_rel``.
- **Per-sample noise**: each timed call is the run's time times a lognormal factor (``sample_sigma`` plus
  ``sample_ns`` in absolute terms), and a share ``spike_p`` of calls read 1.2-2x slower (a right-skewed
  distribution, as the harness sees).
- **Outlier runs**: with probability ``outlier_p`` a run reads a case ``outlier_ns`` slower throughout (the 9.78 µs
  secret run of an 8 µs case that read 7.6–8.1 µs in the others).

The statistics come from ``runners.stats.timing_stats`` over the drawn samples, as the trusted parent computes them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from runners.contract import BenchmarkResult, Mode, RunResult, SystemInfo, TimingStats, Verdict
from runners.stats import timing_stats


@dataclass(frozen=True)
class Noise:
    cluster_ns: float = 150.0
    offset_ns: float = 90.0
    offset_rel: float = 0.0004
    sample_sigma: float = 0.004
    sample_ns: float = 150.0
    spike_p: float = 0.03
    outlier_p: float = 0.0
    outlier_ns: tuple[float, float] = (1000.0, 2000.0)
    samples: int = 31


QUIET = Noise()
"""The process offset and per-sample noise, no outlier runs."""
OUTLIERS = Noise(outlier_p=0.02)
"""The same with one run in 50 reading a case 1-2 µs slow (three such cases in 150 case-readings)."""


def case_stats(rng: random.Random, true_ns: float, noise: Noise) -> TimingStats:
    """One run's statistics of one case whose true time is ``true_ns``."""
    offset = rng.choice((-1.0, 1.0)) * noise.cluster_ns + rng.gauss(0.0, noise.offset_ns)
    offset += true_ns * rng.gauss(0.0, noise.offset_rel)
    if rng.random() < noise.outlier_p:
        offset += rng.uniform(*noise.outlier_ns)
    base = true_ns + offset
    sigma = math.hypot(noise.sample_sigma, noise.sample_ns / true_ns)
    samples = []
    for _ in range(noise.samples):
        x = base * math.exp(rng.gauss(0.0, sigma))
        if rng.random() < noise.spike_p:
            x *= rng.uniform(1.2, 2.0)
        samples.append(x)
    return timing_stats(samples)


def run_result(rng: random.Random, true_ns: Sequence[float], noise: Noise = QUIET, mode: Mode = Mode.BENCHMARK,
               cases: Sequence[dict] | None = None) -> RunResult:  # fmt: skip
    """One accepted run, timed on an H100, of a file whose cases truly take ``true_ns``; its score is the geometric
    mean of the medians."""
    stats = [case_stats(rng, t, noise) for t in true_ns]
    benches = [
        BenchmarkResult(
            index=i, case=(cases[i] if cases else {"us": round(t / 1000)}), verdict=Verdict.ACCEPTED, stats=s
        )
        for i, (t, s) in enumerate(zip(true_ns, stats, strict=True))
    ]
    score = math.exp(math.fsum(math.log(s.median_ns) for s in stats) / len(stats))
    system = SystemInfo(device="cuda", gpu_name="NVIDIA H100 80GB HBM3", gpu_count=1)
    return RunResult(verdict=Verdict.ACCEPTED, mode=mode, benchmarks=benches, score_ns=score, system=system)
