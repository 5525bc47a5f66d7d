"""Speedups over the problem's baselines: the reference's ``ref_kernel`` and any other function of reference.py that
the problem names, timed like the submission (same harness, window, inputs and statistics; see
``Benchmarking.time_baselines``) in the same run, just before the submission's file loads, so that both are timed
under the same conditions (a reference timed in another run, on a machine less loaded, made the reference's own
operation read "0.01x": issue 31).

What a run timed is also kept per machine: the reference's medians bound the steps of later runs that do not time the
reference themselves (``runners.entry.clock``: baselines off, a run of several ranks). The cache is the trusted
entry's (a folder in the runner's cache directory, which submissions see read-only). Its key is everything that could
change a baseline's time: the problem's files and cases, the timing settings, the device, the GPU, its driver, and the
PyTorch and Triton versions. A baseline that could not be timed is not cached.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

from runners import stats
from runners.contract import (
    BASELINES_BUDGET_S,
    BaselineResult,
    BaselineSpec,
    BenchmarkResult,
    RunRequest,
    SystemInfo,
    TimingStats,
)
from runners.ipc.protocol import RBaseline

CACHE_VERSION = 2
"""Bump when the harness's timing changes what a baseline's median means (2: the CPU bound at the echo's floor)."""
BUDGET_S = BASELINES_BUDGET_S


def allowance_s(request: RunRequest) -> float:
    """What a run's time limits add for its baselines (``RunRequest.baselines_allowance_s``)."""
    return request.baselines_allowance_s()


def cache_key(
    request: RunRequest, system: SystemInfo, spec: BaselineSpec, max_batch_calls: int, python: str = ""
) -> str:
    """What a baseline's timing depends on, hashed (SHA-256 of canonical JSON). ``python``: the evaluator's
    interpreter where the runner names one (its PyTorch may not be the entry's)."""
    facts = {
        "python": python,
        "v": CACHE_VERSION,
        "function": spec.function,
        "files": request.files,
        "benchmarks": request.benchmarks,
        "timing": request.timing.model_dump(mode="json"),
        "device": request.device,
        "gpu": system.gpu_name,
        "driver": system.driver,
        "torch": system.torch,
        "triton": system.triton,
        "batch": max_batch_calls,
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


class BaselineCache:
    """Baseline medians on disk, one small JSON file per key. An entry older than ``max_age_s`` is not used (it is
    timed again and replaced): a GPU that read slow once (a hot day, a throttled clock) does not set every later
    speedup on that machine for ever."""

    def __init__(self, folder: Path, max_age_s: float | None = None) -> None:
        self.folder = folder
        self.max_age_s = max_age_s

    def get(self, key: str) -> tuple[list[float], datetime] | None:
        """The cached medians per case and when they were measured, or None (absent, unreadable, or too old)."""
        try:
            data = json.loads((self.folder / f"{key}.json").read_text())
            medians = [float(x) for x in data["medians_ns"]]
            measured = datetime.fromisoformat(data["measured_at"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not medians or not all(math.isfinite(m) and m > 0 for m in medians):
            return None
        if self.max_age_s is not None:
            age = (now() - measured).total_seconds() if measured.tzinfo is not None else float("inf")
            if not 0 <= age <= self.max_age_s:  # (a time in the future is as untrustworthy as an old one)
                return None
        return medians, measured

    def put(self, key: str, medians_ns: list[float], measured_at: datetime) -> None:
        """Store atomically (a reader sees the old file or the new one, never half of one)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{key}.json"
        tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"medians_ns": medians_ns, "measured_at": measured_at.isoformat()}))
        tmp.replace(target)


COMPARABLE_ERROR = 0.05
"""A case's speedup is given only where the ratio of the two medians is known within this (relative standard error,
from both medians' own: ``stats.median_error``). On a machine busy enough to spread either side more, the ratio is
noise, and saying "0.2x" for the reference's own operation would mislead (issue 31)."""


def measured(spec: BaselineSpec, reports: list[RBaseline], cases: int) -> tuple[list[TimingStats | None], str]:
    """A baseline's statistics per case from the evaluator's reports, and why they are incomplete ('' when they are
    not)."""
    got: list[TimingStats | None] = [None] * cases
    note = ""
    for r in reports:
        if r.error:
            note = f"the {spec.label} could not be timed: {r.error}"
            break
        got[r.index] = stats.timing_stats(r.samples_ns)
    if not note and any(s is not None and s.median_ns <= 0 for s in got):
        note = f"the {spec.label} reads 0 ns on a case (too little work to time)"
    if not note and any(s is None for s in got):
        note = f"the {spec.label} was not timed on every benchmark"
    return got, note


def medians(got: list[TimingStats | None]) -> list[float | None]:
    return [s.median_ns if s is not None else None for s in got]


def _ratio_error(base: TimingStats, sub: TimingStats) -> float:
    """The relative standard error of ``base.median / sub.median`` (0 where neither kept its quartiles)."""
    return math.hypot(stats.stats_error(base) or 0.0, stats.stats_error(sub) or 0.0)


def result(
    spec: BaselineSpec,
    got: list[TimingStats | None],
    benches: list[BenchmarkResult],
    *,
    measured_at: datetime | None,
    note: str = "",
) -> BaselineResult:
    """The speedup per case (the baseline's median over the submission's, both timed in this run) where the two are
    comparable (``COMPARABLE_ERROR``), and their geometric mean where every case has one; else the note says why."""
    speedups: list[float | None] = []
    spread: list[str] = []
    for i, base in enumerate(got):
        sub = benches[i].stats if i < len(benches) else None
        if base is None or base.median_ns <= 0 or sub is None or sub.median_ns <= 0:
            speedups.append(None)
            continue
        error = _ratio_error(base, sub)
        if error > COMPARABLE_ERROR:
            speedups.append(None)
            spread.append(f"case {i + 1}, ±{error:.0%}")
            continue
        speedups.append(base.median_ns / sub.median_ns)
    known = [s for s in speedups if s is not None]
    overall = stats.geometric_mean(known) if known and len(known) == len(speedups) else None
    if spread and not note:
        note = (f"no speedup over the {spec.label}: its times and the submission's spread too widely on this machine "
                f"now to compare ({'; '.join(spread)}, more than ±{COMPARABLE_ERROR:.0%}): a busy machine, or too "
                "few samples")  # fmt: skip
    if overall is None and not note and benches:
        note = f"no speedup over the {spec.label}: a benchmark has no median"
    return BaselineResult(
        label=spec.label,
        function=spec.function,
        case_medians_ns=medians(got),
        speedups=speedups,
        speedup=overall,
        measured_at=measured_at,
        note=note,
    )


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)
