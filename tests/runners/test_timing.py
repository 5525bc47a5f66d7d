"""The evaluator's timing loop and the sample rule, without a GPU: fake calls and clocks."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from runners.contract import TimingSettings
from runners.oracle.timing import CASE_TOLERANCE_NS, Sample, cap_overhead, sample_of, tighten_case, time_case


class Clock:
    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _run(
    samples: Callable[[int], float], settings: TimingSettings, step: float = 1e-4, warm_calls: list[int] | None = None
):
    warm_calls = warm_calls if warm_calls is not None else []

    def warm(n: int) -> float:
        warm_calls.append(n)
        return 0.001

    def timed(n: int) -> Sample:
        reading = samples(n)
        return sample_of(reading, reading + 1000.0, 2000.0, 0.0, 0.0, False)

    return time_case(warm, timed, settings, Clock(step))


def test_steady_kernel_stops_at_the_precision_target_after_min_samples() -> None:
    jitter = itertools.cycle([1000.0, 1001.0, 999.0])
    result = _run(lambda _: next(jitter), TimingSettings(min_samples=10, target_rel_error=0.001))
    assert len(result.samples_ns) == 10


def test_noisy_kernel_runs_to_the_sample_cap() -> None:
    noisy = itertools.cycle([500.0, 1500.0])
    settings = TimingSettings(min_samples=10, max_samples=200, max_time_s=100, target_rel_error=0.001)
    assert len(_run(lambda _: next(noisy), settings).samples_ns) == 200


def test_time_budget_counts_warm_up_and_checks_but_never_goes_below_min_samples() -> None:
    noisy = itertools.cycle([500.0, 1500.0])
    settings = TimingSettings(warmup_ms=10, min_samples=10, max_samples=10_000, max_time_s=0.05)
    result = _run(lambda _: next(noisy), settings, step=0.001)  # every clock read costs 1 ms
    # 50 ms in all: ~10 ms of warm-up, then one clock read per sample; without counting the warm-up it would be 50
    assert result.warmup_calls >= 3 and 35 <= len(result.samples_ns) <= 50 - result.warmup_calls
    slow = _run(lambda _: next(noisy), settings, step=0.02)  # a very slow kernel: min_samples still wins
    assert len(slow.samples_ns) == 10


def test_warm_up_is_by_time_and_by_count() -> None:
    calls: list[int] = []
    result = _run(lambda _: 1000.0, TimingSettings(warmup_ms=100, warmup_min_calls=3), step=0.01, warm_calls=calls)
    assert result.warmup_calls == len(calls) >= 5  # 100 ms at 10 ms per clock read
    assert _run(lambda _: 1000.0, TimingSettings(warmup_ms=0, warmup_min_calls=7)).warmup_calls == 7


def test_an_honest_reading_stands_when_the_trusted_window_agrees() -> None:
    # window = reading + 280 µs of context switches; the calibrated bound on that overhead is 285 µs
    s = sample_of(reading_ns=50_000, window_ns=330_000, overhead_ns=285_000, event_ns=1_300, allowance_ns=0,
                  degraded=False)  # fmt: skip
    assert s.ns == 48_700 and not s.bounded


def test_a_rewritten_reading_is_replaced_by_what_the_trusted_window_allows() -> None:
    # the submission says 1 ns; its window says at least 330 - 285 = 45 µs of work happened
    s = sample_of(reading_ns=1, window_ns=330_000, overhead_ns=285_000, event_ns=1_300, allowance_ns=0, degraded=False)
    assert s.bounded and s.ns == 45_000 - 1_300


def test_a_batch_sample_is_the_time_per_call_and_cannot_be_forged_below_the_bound() -> None:
    honest = sample_of(reading_ns=16 * 5_000, window_ns=16 * 5_000 + 282_000, overhead_ns=285_000, event_ns=1_000,
                       allowance_ns=0, degraded=False, calls=16)  # fmt: skip
    assert honest.ns == (80_000 - 1_000) / 16 and not honest.bounded
    forged = sample_of(reading_ns=16.0, window_ns=16 * 5_000 + 282_000, overhead_ns=285_000, event_ns=1_000,
                       allowance_ns=0, degraded=False, calls=16)  # fmt: skip
    # what one window can hide (here 3 µs) is spread over 16 calls: under 0.2 µs of a 5 µs call
    assert forged.bounded and honest.ns - forged.ns <= 3_000 / 16 + 1


def test_a_sample_is_never_negative() -> None:
    assert sample_of(0.0, 10.0, 285_000.0, 1_300.0, 0.0, False).ns == 0.0


def test_the_overhead_is_capped_by_the_smallest_window_of_the_case() -> None:
    """A calibration made in a busier moment than the case (a shared CPU) overstates the overhead; no call's
    overhead exceeds its own window, so the smallest window caps it, and a forged reading gains nothing from the
    difference. The cap only ever raises samples, and leaves a calibration below every window alone."""
    forged = [sample_of(1.0, w, 250_000.0, 0.0, 0.0, False) for w in (60_000.0, 80_000.0, 100_000.0)]
    assert [s.ns for s in forged] == [1.0, 1.0, 1.0]  # the overstated calibration lets every reading through
    capped, used = cap_overhead(forged, 250_000.0)
    assert used == 60_000.0 and [s.ns for s in capped] == [1.0, 20_000.0, 40_000.0]
    assert all(c.ns >= f.ns for c, f in zip(capped, forged, strict=True)) and all(c.bounded for c in capped[1:])
    honest = [sample_of(r, r + 45_000.0, 50_000.0, 0.0, 0.0, False) for r in (30_000.0, 31_000.0)]
    assert cap_overhead(honest, 50_000.0) == (honest, 50_000.0)
    assert cap_overhead([], 50_000.0) == ([], 50_000.0)


def test_the_overhead_cap_is_never_negative_and_needs_a_few_windows() -> None:
    """An allowance larger than its window (redteam: inflate_allowance) must not turn the cap into a negative
    overhead that raises honest samples; and one or two windows say too little about the smallest honest one."""
    inflated = [sample_of(1.0, w, 50_000.0, 0.0, a, False) for w, a in ((60_000.0, 9e9), (70_000.0, 0.0),
                                                                         (80_000.0, 0.0))]
    capped, used = cap_overhead(inflated, 50_000.0)
    assert used == 0.0 and all(s.ns >= 1.0 for s in capped)
    few = [sample_of(1.0, 60_000.0, 250_000.0, 0.0, 0.0, False)] * 2
    assert cap_overhead(few, 250_000.0) == (few, 250_000.0)


def test_a_few_outliers_do_not_hold_back_a_case_whose_median_is_known() -> None:
    # 2% jitter around 9 µs, and one sample in 20 a 300 µs context switch: the mean's error stays far above 0.1%
    jitter = itertools.cycle([9000.0 * (1 + 0.02 * ((i % 7) - 3) / 3) for i in range(19)] + [300_000.0])
    settings = TimingSettings(min_samples=10, max_samples=1000, max_time_s=100, target_rel_error=0.002)
    result = _run(lambda _: next(jitter), settings)
    assert 10 < len(result.samples_ns) < 200


def test_the_median_error_is_robust_and_relative() -> None:
    from runners.oracle.timing import median_rel_error

    steady = sorted([100.0, 101.0, 99.0, 100.0] * 25)
    assert median_rel_error(steady) < median_rel_error(sorted([50.0, 150.0] * 50))
    with_outliers = sorted([100.0, 101.0, 99.0, 100.0] * 25 + [1e6] * 5)
    assert median_rel_error(with_outliers) < 0.01
    assert median_rel_error(sorted(x * 1000 for x in steady)) == pytest.approx(median_rel_error(steady))



def test_on_the_cpu_precision_stops_a_case_only_after_enough_windows_to_bound_a_forgery() -> None:
    from runners.oracle.timing import CPU_MIN_WINDOWS

    steady = itertools.cycle([1000.0, 1001.0, 999.0])  # the median is known after min_samples
    settings = TimingSettings(min_samples=5, max_samples=1000, max_time_s=100, target_rel_error=0.002)
    assert len(_run(lambda _: next(steady), settings).samples_ns) == 5  # a GPU case
    warm_calls: list[int] = []
    cpu = time_case(lambda n: warm_calls.append(n) or 0.001, lambda n: sample_of(1000.0, 2000.0, 2000.0, 0, 0, False),
                    settings, Clock(1e-4), precision_after=CPU_MIN_WINDOWS)  # fmt: skip
    assert len(cpu.samples_ns) == CPU_MIN_WINDOWS
    capped = TimingSettings(min_samples=5, max_samples=20, max_time_s=100)  # the count cap still comes first
    assert len(time_case(lambda n: 0.001, lambda n: sample_of(1000.0, 2000.0, 2000.0, 0, 0, False), capped,
                         Clock(1e-4), precision_after=CPU_MIN_WINDOWS).samples_ns) == 20  # fmt: skip


def test_a_reading_above_its_window_counts_as_the_window() -> None:
    """Red team, 2026-11-25: a finite 1e200 ns reading made the trusted statistics overflow (an infrastructure
    error). No honest reading exceeds the window that holds the call."""
    sample = sample_of(1e200, 500_000.0, 300_000.0, 1_000.0, 0.0, False)
    assert sample.ns == 499_000.0 and not sample.bounded


def _case(reading_ns: float, excess_ns: float, n: int = 9) -> list[Sample]:
    """A GPU case: each window holds the reading plus ``excess_ns`` (what the window added), under a calibrated
    bound of 300 µs and an event pair of 1 µs."""
    return [sample_of(reading_ns, reading_ns + excess_ns + 100.0 * i, 300_000.0, 1_000.0, 0.0, False) for i in range(n)]


def test_a_case_whose_readings_were_cut_is_held_to_the_typical_window_cost() -> None:
    """Red team, 2026-11-25: the per-sample bound (the echo's 90th percentile plus 5 µs) sat 10–30 µs above what the
    window typically adds on the H100, so a 50 µs kernel could report 25 µs. A case's median excess beyond the
    echo's typical cost plus CASE_TOLERANCE_NS bounds the whole case at that cost."""
    typical = 285_000.0
    honest = _case(50_000.0, typical + 2_000.0)  # real kernels add a little more than the echo's spin
    assert tighten_case(honest, typical) == honest
    forged = _case(25_000.0, typical + 2_000.0 + 25_000.0)  # 25 µs cut off each 50 µs reading
    held = tighten_case(forged, typical)
    median = sorted(s.ns for s in held)[len(held) // 2]
    assert 50_000.0 - CASE_TOLERANCE_NS - 1_000.0 <= median < 50_000.0 and all(s.bounded for s in held)
    assert tighten_case(forged, 0.0) == forged  # no typical cost known (an old calibration): as before
    big = _case(500_000.0, typical + 7_000.0)  # a long kernel's switches cost a few µs more: 2% of it is tolerated
    assert tighten_case(big, typical) == big


def test_no_sample_counts_less_than_a_trivial_kernel_reads() -> None:
    """A 2 µs kernel reported at 0.3 µs: below the window's resolution, and above the speed-of-light gate's
    nanoseconds. The floor is a share of what the echo's trivial kernel read."""
    forged = sample_of(1_300.0, 290_000.0, 300_000.0, 1_000.0, 0.0, False, 1, min_call_ns=1_200.0)
    assert forged.ns == 1_200.0 and forged.bounded
    honest = sample_of(3_500.0, 290_000.0, 300_000.0, 1_000.0, 0.0, False, 1, min_call_ns=1_200.0)
    assert honest.ns == 2_500.0 and not honest.bounded
