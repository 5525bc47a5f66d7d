"""One benchmark case on the evaluator's side (runners/oracle/benchmark.py), without processes: what its samples say
(the overhead they count, the notes, the trust) is decided by pure functions, and ``CaseRun``'s calls (warm-up, timed
batches on inputs of their own, every output checked, the batch size agreed) are checked against a fake evaluator."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from runners.contract import Verdict
from runners.oracle.base import Fatal, derive_seed
from runners.oracle.benchmark import CaseRun, adjusted_samples, case_notes, case_trust, enqueue_timeout_s
from runners.oracle.timing import Sample, cap_overhead
from runners.oracle.window import Calibration

CAL = Calibration(overhead_ns=1000.0, event_ns=0.0, slack_ns=100.0)
SETTINGS = SimpleNamespace(min_samples=10, max_samples=100)


def _samples(n: int, *, bounded: int = 0, degraded: int = 0, window_ns: float = 5000.0) -> list[Sample]:
    return [Sample(ns=1000.0 + i, window_ns=window_ns + i, bounded=i < bounded, degraded=i < degraded,
                   calls=1 + i % 3, reading_ns=1000.0) for i in range(n)]  # fmt: skip


def test_the_enqueue_timeout_leaves_the_building_call_out_and_stays_within_10_ms_and_2_s() -> None:
    assert enqueue_timeout_s([5.0, 0.1, 0.1, 0.1]) == pytest.approx(0.4)  # 4 x the 90th percentile, not the first
    assert enqueue_timeout_s([0.001, 0.001]) == 0.01
    assert enqueue_timeout_s([0.9]) == 2.0  # one call: that one, capped


def test_on_the_cpu_the_overhead_is_capped_by_the_cases_smallest_window_and_on_a_gpu_it_stands() -> None:
    samples = _samples(12, window_ns=600.0)
    capped, overhead = adjusted_samples(samples, CAL, cuda=False)
    assert overhead == 600.0 and (capped, overhead) == cap_overhead(samples, CAL.overhead_ns) and capped != samples
    same, overhead = adjusted_samples(samples, CAL, cuda=True)  # (no typical cost known: nothing to tighten)
    assert overhead == 1000.0 and same == samples


def test_an_honest_case_has_no_notes() -> None:
    assert case_notes(_samples(12), SETTINGS, 0.5, cuda=True) == []


def test_the_notes_say_where_the_host_waited_the_budget_went_and_the_clock_bounded() -> None:
    notes = case_notes(_samples(8, bounded=3, degraded=2), SETTINGS, 6.04, cuda=True)
    assert notes == [
        "custom_kernel waited for the GPU inside 2 of 8 timed batches; the host's time was counted in those",
        "only 8 of the 10 timed samples asked for fit the case's time budget; the problem's check of the outputs "
        "took 6.0 s of it",
        "in 3 of 8 timed batches the evaluator's clock allowed less than the submission process's own timing said; "
        "those count the evaluator's time",
    ]
    # On the CPU the evaluator's clock sets most samples: no note for that.
    assert len(case_notes(_samples(12, bounded=12), SETTINGS, 0.0, cuda=False)) == 0


def test_the_trust_counts_the_bounded_and_degraded_batches_and_takes_medians() -> None:
    trust = case_trust(_samples(5, bounded=2, degraded=1), 750.0)
    assert (trust.overhead_ns, trust.bounded_calls, trust.degraded_calls) == (750.0, 2, 1)
    assert trust.window_median_ns == 5002.0 and trust.calls_per_sample == 2


# ---- CaseRun against a fake evaluator ----------------------------------------------------------------------------
class _Tensor:
    pass


@dataclass
class _Out:
    outputs: list[Any]
    error: str | None = None
    reading_ns: float | None = 900.0
    window_ns: float = 3000.0
    allowance_ns: float = 0.0
    degraded: bool = False


@dataclass
class _Evaluator:
    """What ``CaseRun`` uses of the evaluator: inputs are the case's seed, an output is its input plus one."""

    wrong_at: int | None = None
    """The timed call (0-based, over the case) whose output is wrong."""
    degraded: bool = False
    secret: str = "s3cret"
    torch: Any = field(default_factory=lambda: SimpleNamespace(Tensor=_Tensor))
    cuda: bool = False
    window: Any = field(default_factory=object)
    peer: Any = field(default_factory=object)
    k: int = 0
    calls: list[tuple[list[Any], bool, float]] = field(default_factory=list)
    checked: list[tuple[Any, Any]] = field(default_factory=list)

    def generate(self, case: dict[str, Any]) -> int:
        return int(case["seed"])

    def place(self, batch: list[Any]) -> list[Any]:
        return list(batch)

    def next_k(self) -> int:
        self.k += 1
        return self.k

    def call(self, k: int, batch: list[Any], *, timed: bool, enqueue_timeout: float) -> _Out:
        self.calls.append((batch, timed, enqueue_timeout))
        made = sum(len(b) for b, t, _ in self.calls if t)
        wrong = self.wrong_at if timed else None
        outputs = [x + (2 if made - len(batch) + j == wrong else 1) for j, x in enumerate(batch)]
        return _Out(outputs, degraded=self.degraded and timed)

    def check_output(self, data: Any, output: Any) -> tuple[bool, str]:
        self.checked.append((data, output))
        return output == data + 1, f"{output} is not {data} + 1"

    def fail_call(self, error: str, where: str) -> Fatal:
        return Fatal(Verdict.RUNTIME_ERROR, f"{where}: {error}", "submission")

    def slowest(self, sample: Sample) -> Sample:
        return sample

    def agree_calls(self, calls: int) -> int:
        return calls

    def _batch_size(self, sample: Sample, out: Any, calls: int, cal: Calibration, footprint: int) -> int:
        return 4


def test_warm_up_checks_the_first_output_and_times_the_host() -> None:
    ev = _Evaluator()
    run = CaseRun(ev, 0, {"seed": 7}, True, CAL)  # type: ignore[arg-type]
    assert run.warm(0) >= 0 and run.warm(1) >= 0 and len(run.host_times) == 2
    assert [c[0] for c in ev.calls] == [[7], [7]] and ev.checked == [(7, 8)]  # only the first call's output


def test_timed_batches_get_fresh_inputs_from_the_secret_and_every_output_is_checked() -> None:
    ev = _Evaluator()
    run = CaseRun(ev, 1, {"seed": 7}, True, CAL)  # type: ignore[arg-type]
    run.warm(0)
    first = run.timed(0)
    second = run.timed(1)
    assert first.calls == 1 and second.calls == 4 and run.made == 5  # the agreed batch size from the 2nd batch on
    timed = [c for c in ev.calls if c[1]]
    assert timed[1][0] == [derive_seed("s3cret", 1, j) for j in range(1, 5)]
    assert timed[0][2] == enqueue_timeout_s(run.host_times)
    assert len(ev.checked) == 1 + 5 and run.check_s >= 0


def test_a_case_without_a_seed_times_the_public_input_and_checks_against_a_regenerated_one() -> None:
    ev = _Evaluator()
    run = CaseRun(ev, 0, {"seed": 3}, False, CAL)  # type: ignore[arg-type]
    run.warm(0)
    run.timed(0)
    run.timed(1)
    assert [c[0] for c in ev.calls] == [[3], [3], [3, 3, 3, 3]] and ev.checked[-1] == (3, 4)


def test_a_wrong_timed_output_names_its_call() -> None:
    ev = _Evaluator(wrong_at=2)
    run = CaseRun(ev, 0, {"seed": 1}, True, CAL)  # type: ignore[arg-type]
    run.warm(0)
    run.timed(0)
    with pytest.raises(Fatal) as err:
        run.timed(1)
    assert err.value.verdict is Verdict.WRONG_ANSWER and err.value.message.startswith("benchmark 1, timed call 3: ")


def test_a_submission_that_synchronises_every_time_is_no_longer_waited_for() -> None:
    ev = _Evaluator(degraded=True)
    run = CaseRun(ev, 0, {"seed": 1}, True, CAL)  # type: ignore[arg-type]
    run.warm(0)
    for n in range(3):
        run.timed(n)
    assert run.degraded == 3 and run.enqueue_timeout == 0.0
