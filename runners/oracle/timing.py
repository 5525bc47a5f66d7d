"""How many calls one benchmark case gets, and what each call's sample is.

Warm-up by time and count, then timed calls until the standard error of the median falls below the target, capped
by a sample count and a time budget that includes input generation and checks (docs/measurement.md). Each timed
call's sample is the submission process's own reading, raised to what the trusted window allows (see
:func:`sample_of`), so a reading the submission rewrote can make its score no better than the window says.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

from runners.contract import TimingSettings
from runners.stats import median_error, quantile

HARD_TIME_FACTOR = 5.0
"""``min_samples`` outranks ``max_time_s``, up to this many times ``max_time_s`` (a very slow kernel)."""


def case_budget_s(settings: TimingSettings) -> float:
    """The longest the evaluator's clock lets one benchmark case's warm-up and timed calls go on (counted from its
    first warm-up call); the call in flight when it runs out comes on top. The entry bounds a case from it."""
    return HARD_TIME_FACTOR * settings.max_time_s


@dataclass(frozen=True)
class Sample:
    ns: float
    """What counts: the reading, or the trusted bound where the reading is below it, less the event cost."""
    window_ns: float
    bounded: bool
    """The reading was below what the trusted window allows, and the bound was used."""
    degraded: bool
    calls: int = 1
    """Calls in the batch this sample is the mean of."""
    reading_ns: float = 0.0
    event_ns: float = 0.0
    allowance_ns: float = 0.0


def sample_of(
    reading_ns: float,
    window_ns: float,
    overhead_ns: float,
    event_ns: float,
    allowance_ns: float,
    degraded: bool,
    calls: int = 1,
    min_call_ns: float = 0.0,
) -> Sample:
    """(max(reading, window - overhead - allowance) - event cost) / calls, never below ``min_call_ns`` (the least a
    call that launches a kernel reads; 0 where unknown): the time per call of a batch of ``calls`` calls made back to
    back in one window.

    ``overhead_ns`` is the calibrated upper bound on what the window adds to honest work; a reading below
    ``window - overhead`` cannot be the submission's real time, so the bound takes its place. A reading above the
    window cannot be either (the window holds the call): it counts as the window."""
    reading_ns = min(reading_ns, window_ns)
    bound = window_ns - overhead_ns - allowance_ns
    value = max(reading_ns, bound)
    per_call = max(value - event_ns, 0.0) / calls
    return Sample(
        max(per_call, min_call_ns),
        window_ns,
        bound > reading_ns or per_call < min_call_ns,
        degraded,
        calls,
        reading_ns,
        event_ns,
        allowance_ns,
    )


MIN_SAMPLES_TO_CAP = 3
CPU_MIN_WINDOWS = 50
"""On the CPU the precision target stops a case only after this many samples: its bound on a forged reading is set by
the smallest window seen (:func:`cap_overhead`), and a handful of windows says too little about the smallest (a
case stopped at 5 samples let a zeroed reading score a fifth of honest work in CI). The count and time caps still
apply first."""


def cap_overhead(samples: list[Sample], overhead_ns: float) -> tuple[list[Sample], float]:
    """The samples again with the calibrated overhead lowered to the case's smallest window (less its allowance)
    where that is lower, and the overhead used.

    No call's overhead exceeds its own window, so the smallest window bounds the overhead as well as the echo's
    calibration does. On a shared CPU the echo may have been calibrated in a busier moment than the case ran in;
    its bound is then larger than many windows, and a rewritten reading could hide inside the difference. The cap
    closes that: a forged reading counts at least ``window - smallest window``. It only ever raises samples."""
    if len(samples) < MIN_SAMPLES_TO_CAP:  # too few windows to say what the smallest honest one is
        return samples, overhead_ns
    cap = max(0.0, min(s.window_ns - s.allowance_ns for s in samples))  # an overhead is never negative
    if cap >= overhead_ns:
        return samples, overhead_ns
    capped = [
        sample_of(s.reading_ns, s.window_ns, cap, s.event_ns, s.allowance_ns, s.degraded, s.calls) for s in samples
    ]
    return capped, cap


CASE_TOLERANCE_NS = 5_000.0
CASE_TOLERANCE_SHARE = 0.02
"""How much more than the echo's typical cost the window may add, in a case's median, before the case is bounded as
a whole: 5 µs or 2% of the case's median reading, whichever is more. Real kernels' context switches measured up to
~3 µs more than the echo's spin, and a 524 µs vector add's up to ~6 µs more in one run of three (H100, 2026-11-25)."""


def tighten_case(samples: list[Sample], typical_ns: float, min_call_ns: float = 0.0) -> list[Sample]:
    """GPU, one call per window: the samples again, bounded with the typical cost plus the tolerance as the overhead,
    when the case's median of window minus reading exceeds it; else as they were. It only ever raises samples.

    Each sample's bound uses the calibration's upper bound (the 90th percentile plus a margin), 10–30 µs above what
    the window typically adds on the H100: room in which a rewritten reading hid per call. An honest case's median
    excess stays near the echo's typical; a case whose readings were cut by more than the tolerance shows it in its
    median, and is then held to the typical cost plus the tolerance (red team, 2026-11-25)."""
    if not typical_ns or len(samples) < MIN_SAMPLES_TO_CAP or any(s.calls > 1 for s in samples):
        return samples  # (batches are sized so that the calibration's slack is a fiftieth of their work already)
    readings = sorted(min(s.reading_ns, s.window_ns) for s in samples)
    limit = typical_ns + max(CASE_TOLERANCE_NS, CASE_TOLERANCE_SHARE * readings[len(readings) // 2])
    excess = sorted(s.window_ns - s.allowance_ns - min(s.reading_ns, s.window_ns) for s in samples)
    if excess[len(excess) // 2] <= limit:
        return samples
    return [
        sample_of(s.reading_ns, s.window_ns, limit, s.event_ns, s.allowance_ns, s.degraded, s.calls, min_call_ns)
        for s in samples
    ]


@dataclass
class CaseTiming:
    samples: list[Sample] = field(default_factory=list)
    warmup_calls: int = 0

    @property
    def samples_ns(self) -> list[float]:
        return [s.ns for s in self.samples]


def time_case(
    warm: Callable[[int], float],
    timed: Callable[[int], Sample],
    settings: TimingSettings,
    clock: Callable[[], float],
    precision_after: int = 0,
) -> CaseTiming:
    """``warm(n)`` runs warm-up call n and returns its host time (s); ``timed(n)`` runs timed call n. The precision
    target stops the case only from ``precision_after`` samples on (``CPU_MIN_WINDOWS`` on the CPU)."""
    result = CaseTiming()
    start = clock()
    warm_cap = max(settings.warmup_ms / 1000.0, 0.25 * settings.max_time_s)
    n = 0
    while True:
        warm(n)
        n += 1
        elapsed = clock() - start
        if n >= settings.warmup_min_calls and elapsed >= settings.warmup_ms / 1000.0:
            break
        if elapsed >= warm_cap:
            break
    result.warmup_calls = n
    ordered: list[float] = []
    count = 0
    while True:
        sample = timed(count)
        result.samples.append(sample)
        count += 1
        bisect.insort(ordered, sample.ns)
        if _stop(ordered, clock() - start, settings, precision_after):
            break
    return result


def median_rel_error(ordered: list[float]) -> float:
    """The standard error of the median of ``ordered`` (sorted samples), relative to the median
    (``stats.median_error``: from the IQR, so that a few outliers do not hold back a case whose median is already
    known, as they do the mean's error)."""
    q = [quantile(ordered, x) for x in (0.5, 0.25, 0.75)]  # the same quantiles the reported statistics use
    return median_error(q[0], q[1], q[2], len(ordered))


def _stop(ordered: list[float], elapsed_s: float, s: TimingSettings, precision_after: int = 0) -> bool:
    n = len(ordered)
    if n >= s.max_samples:
        return True
    if n < s.min_samples:
        return elapsed_s >= case_budget_s(s)
    if elapsed_s >= s.max_time_s:
        return True
    return n >= precision_after and median_rel_error(ordered) <= s.target_rel_error


