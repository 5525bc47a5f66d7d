"""The timing loop and the in-process checks, without a GPU: fake timers and clocks, real torch on the CPU."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from runners.contract import TimingSettings
from runners.harness import integrity
from runners.harness.timing import time_case


class FakeTimer:
    """Samples from a list; the guard gap says whether work was hidden on other streams."""

    MUTABLE: frozenset[str] = frozenset()

    def __init__(self, samples: Callable[[int], float], gap: float = 0.0, strict: float = 0.0) -> None:
        self.samples, self.gap, self.strict = samples, gap, strict
        self.calls = 0
        self.warm_calls = 0

    def warm(self, fn: Callable[[Any], Any], data: Any) -> tuple[Any, float]:
        self.warm_calls += 1
        return fn(data), 10_000.0

    def set_spin(self, host_ns: list[float]) -> float:
        return 25_000.0

    def measure(self, fn: Callable[[Any], Any], data: Any) -> tuple[Any, float, float]:
        self.calls += 1
        return fn(data), self.samples(self.calls), self.gap

    def measure_strict(self, fn: Callable[[Any], Any], data: Any) -> tuple[Any, float]:
        return fn(data), self.strict

    def baseline_gap(self) -> float:
        return 10_000.0

    def hidden_work(self, samples: list[float], gaps: list[float], baseline_ns: float) -> bool:
        return self.gap - baseline_ns > 40_000


class Clock:
    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _run(timer: FakeTimer, settings: TimingSettings, step: float = 1e-4, checked: list[int] | None = None):
    def after(k: int, data: Any, out: Any) -> None:
        if checked is not None:
            checked.append(k)

    return time_case(timer, lambda d: d, lambda k: k, after, settings, clock=Clock(step))


def test_steady_kernel_stops_at_the_precision_target_after_min_samples() -> None:
    jitter = itertools.cycle([1000.0, 1001.0, 999.0])
    result = _run(FakeTimer(lambda _: next(jitter)), TimingSettings(min_samples=10, target_rel_error=0.001))
    assert len(result.samples_ns) == 10 and not result.strict


def test_noisy_kernel_runs_to_the_sample_cap() -> None:
    noisy = itertools.cycle([500.0, 1500.0])
    settings = TimingSettings(min_samples=10, max_samples=200, max_time_s=100, target_rel_error=0.001)
    assert len(_run(FakeTimer(lambda _: next(noisy)), settings).samples_ns) == 200


def test_time_budget_counts_warm_up_and_checks_but_never_goes_below_min_samples() -> None:
    noisy = itertools.cycle([500.0, 1500.0])
    settings = TimingSettings(warmup_ms=10, min_samples=10, max_samples=10_000, max_time_s=0.05)
    result = _run(FakeTimer(lambda _: next(noisy)), settings, step=0.001)  # every clock read costs 1 ms
    # 50 ms in all: ~10 ms of warm-up, then one clock read per sample; without counting the warm-up it would be 50
    assert result.warmup_calls >= 3 and 35 <= len(result.samples_ns) <= 50 - result.warmup_calls
    slow = _run(FakeTimer(lambda _: next(noisy)), settings, step=0.02)  # a very slow kernel: min_samples still wins
    assert len(slow.samples_ns) == 10


def test_warm_up_is_by_time_and_by_count() -> None:
    timer = FakeTimer(lambda _: 1000.0)
    result = _run(timer, TimingSettings(warmup_ms=100, warmup_min_calls=3), step=0.01)
    assert result.warmup_calls == timer.warm_calls >= 5  # 100 ms at 10 ms per clock read
    timer = FakeTimer(lambda _: 1000.0)
    assert _run(timer, TimingSettings(warmup_ms=0, warmup_min_calls=7)).warmup_calls == 7


def test_every_timed_output_is_handed_to_the_check() -> None:
    checked: list[int] = []
    result = _run(FakeTimer(lambda _: 1000.0), TimingSettings(min_samples=12), checked=checked)
    assert checked == list(range(len(result.samples_ns)))


def test_work_hidden_on_other_streams_is_retimed_device_wide() -> None:
    timer = FakeTimer(lambda _: 1_000.0, gap=200_000.0, strict=201_000.0)
    result = _run(timer, TimingSettings(min_samples=10))
    assert result.strict and "other CUDA streams" in result.note
    assert set(result.samples_ns) == {201_000.0}  # the hidden work is counted, not the 1 µs the stream showed


def test_pristine_numerics_puts_the_references_precision_back_for_the_check() -> None:
    torch = pytest.importorskip("torch")
    pristine = tuple(integrity.numeric_state(torch).items())
    torch.set_default_dtype(torch.float64)
    torch.set_float32_matmul_precision("medium")
    try:
        with integrity.pristine_numerics(torch, pristine):
            assert torch.get_default_dtype() is torch.float32
            assert torch.get_float32_matmul_precision() == dict(pristine)["float32_matmul_precision"]
        assert torch.get_default_dtype() is torch.float64  # the submission's own choice, back for its next call
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_default_dtype(torch.float32)
        torch.set_float32_matmul_precision(dict(pristine)["float32_matmul_precision"])


def test_snapshot_catches_swapped_attributes_added_methods_and_hooks() -> None:
    import sys
    import types

    module = types.ModuleType("watched")
    module.f = lambda: 1  # type: ignore[attr-defined]

    class Checker:
        def check(self) -> bool:
            return True

    obj = Checker()
    obj.timer = object()  # type: ignore[attr-defined]
    snap = integrity.Snapshot({"watched": module, "Checker": Checker}, instances={"checker": (obj, frozenset())})
    snap.verify()
    module.g = lambda: 2  # type: ignore[attr-defined]  # a new attribute of a module is fine (lazy imports)
    snap.verify()
    obj.timer = object()  # type: ignore[attr-defined]
    with pytest.raises(integrity.TamperError, match=r"checker\.timer"):
        snap.verify()
    obj.__dict__.pop("timer")
    snap.seal()
    Checker.extra = lambda self: 0  # type: ignore[attr-defined]
    with pytest.raises(integrity.TamperError, match=r"Checker\.extra"):
        snap.verify()
    del Checker.extra
    sys.setprofile(lambda *a: None)
    try:
        with pytest.raises(integrity.TamperError, match="hook"):
            snap.verify()
    finally:
        sys.setprofile(None)
    snap.verify()
