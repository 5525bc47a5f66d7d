"""A long-lived runner's benchmark-mode runs on one GPU take the baselines the last run there timed, within
``RunnerSettings.baseline_reuse_s`` (issue 33's throughput: a program's candidates back to back), and say so; a
ranked run always times its own (issue 31). Without processes: the plan's flags, the keeper (``Prestarter``) and
the executor's baselines (``runners.entry._Baselines``)."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import runners.entry as entry
import runners.entry.prestart as prestart_module
from runners.contract import (
    REFERENCE_BASELINE,
    BaselineSpec,
    BenchmarkResult,
    Mode,
    RunRequest,
    RunResult,
    SubmissionFile,
    SystemInfo,
    TimingSettings,
    TimingStats,
    Verdict,
)
from runners.entry.plan import Machine, Purpose, plan_run
from runners.entry.prestart import Prestarter, TimedBaseline
from runners.entry.session import Shape, make_shape
from runners.gpus import Gpu
from runners.ipc.protocol import ClockCalibration, RBaseline
from runners.settings import RunnerSettings

FAST = BaselineSpec(label="fast", function="fast_kernel")
H200 = Gpu(index=0, uuid="GPU-aaaa", name="NVIDIA H200", minor=0)
OTHER = Gpu(index=1, uuid="GPU-bbbb", name="NVIDIA H200", minor=1)


def _request(mode: Mode = Mode.BENCHMARK, device: str = "cuda", **update: Any) -> RunRequest:
    fields: dict[str, Any] = {
        "problem": "p", "lang": "py", "mode": mode, "files": {"reference.py": "x = 1\n"}, "device": device,
        "submission": SubmissionFile(name="s.py", content=b"def custom_kernel(data):\n    return data\n"),
        "tests": [{"n": 1, "seed": 1}], "benchmarks": [{"n": 2, "seed": 2}, {"n": 3, "seed": 3}],
        "baselines": [REFERENCE_BASELINE, FAST], "baseline_group": "account 1",
    }  # fmt: skip
    return RunRequest(**(fields | update))


def _settings(tmp_path: Path, **update: Any) -> RunnerSettings:
    return RunnerSettings(cache_dir=tmp_path / "cache", job_root=tmp_path / "jobs", **update)


def _shape(request: RunRequest, gpu: Gpu = H200) -> Shape:
    return make_shape(request, gpu=gpu, python=sys.executable, prefix=[], extra_ro=(), submission_env=None,
                      require_sandbox=False)  # fmt: skip


SYSTEM = SystemInfo(gpu_name="NVIDIA H200", driver="580.159.04")


def _reports(label: str, medians: tuple[float, float]) -> list[RBaseline]:
    return [RBaseline(label=label, index=i, samples_ns=[m] * 20) for i, m in enumerate(medians)]


def _passed(request: RunRequest, medians: tuple[float, float] = (100.0, 200.0)) -> RunResult:
    def stats(m: float) -> TimingStats:
        return TimingStats(samples=20, median_ns=m, mean_ns=m, std_ns=0, stderr_ns=0, min_ns=m, max_ns=m, p25_ns=m,
                           p75_ns=m)  # fmt: skip

    benches = [
        BenchmarkResult(index=i, case=case, verdict=Verdict.ACCEPTED, stats=stats(m))
        for i, (case, m) in enumerate(zip(request.benchmarks, medians, strict=True))
    ]
    return RunResult(verdict=Verdict.ACCEPTED, mode=request.mode, benchmarks=benches)


TIMED = {"reference": _reports("reference", (300.0, 800.0)), "fast": _reports("fast", (150.0, 400.0))}


CALIBRATION = ClockCalibration(overhead_ns=300_000.0, event_ns=1_300.0, slack_ns=2_000.0)


def _calibrated(keeper: Prestarter, shape: Shape) -> float:
    """The calibration a run took on ``shape``'s GPU, left in the keeper; its stamp."""
    keeper.remember_calibration(shape, CALIBRATION)
    stamp = keeper.calibration_stamp(shape)
    assert stamp is not None
    return stamp


def _timed_run(request: RunRequest, settings: RunnerSettings, keeper: Prestarter, shape: Shape,
               reports: dict[str, list[RBaseline]], *, calibration: float | None,
               timed_ago_s: float = 0.0) -> tuple[tuple[tuple[str, str], ...], RunResult]:  # fmt: skip
    """What the executor does with one run's baselines (``runners.entry._Execution``): asks the keeper (the run
    reusing the calibration taken at ``calibration``), tells the evaluator what to time, and finishes the result from
    what the evaluator reported (``reports``, the last of them ``timed_ago_s`` ago)."""
    plan = plan_run(request, settings, Machine(prestarter=True), Purpose.RUN)
    timed = entry._Baselines(request, SYSTEM, settings, plan.baselines)
    if plan.remember_baselines:
        timed.keep_in(keeper, shape, request.baseline_group, reuse=plan.reuse_baselines, calibration=calibration)
    asked = () if timed.reused else plan.job_baselines  # (as the executor gives the job: runners.entry)
    timed_at = prestart_module.time.monotonic() - timed_ago_s if reports else None
    return asked, timed.finish(_passed(request), reports, timed_at, calibration)


BOTH = (("reference", "ref_kernel"), ("fast", "fast_kernel"))


# ---- the plan ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "device", "world_size", "reuse", "remember"),
    [
        (Mode.BENCHMARK, "cuda", 1, True, True),
        (Mode.RANKED, "cuda", 1, False, True),  # a ranked run times its own, and leaves them for the next
        (Mode.BENCHMARK, "cpu", 1, False, False),  # a CPU's conditions move with its load (issue 31's case)
        (Mode.TEST, "cuda", 1, False, False),
        (Mode.PROFILE, "cuda", 1, False, False),
        (Mode.BENCHMARK, "cuda", 2, False, False),
    ],
)
def test_which_runs_reuse_and_keep_the_baselines(
    mode: Mode, device: str, world_size: int, reuse: bool, remember: bool
) -> None:
    request = _request(mode, device, world_size=world_size)
    plan = plan_run(request, RunnerSettings(), Machine(prestarter=True), Purpose.RUN)
    assert (plan.reuse_baselines, plan.remember_baselines) == (reuse, remember)
    cold = plan_run(request, RunnerSettings(), Machine(prestarter=False), Purpose.RUN)
    assert not cold.reuse_baselines and not cold.remember_baselines  # the one-shot entry has no keeper


@pytest.mark.parametrize(
    ("update", "settings"),
    [
        ({"benchmarks": []}, {}),
        ({}, {"time_baselines": False}),
        ({}, {"baseline_reuse_s": 0}),
        ({"baseline_group": ""}, {}),  # a request of no group (a retiming, a compare, a remote route's) times its own
    ],
)
def test_no_reuse_without_baselines_a_group_or_with_the_setting_off(
    update: dict[str, Any], settings: dict[str, Any]
) -> None:
    plan = plan_run(_request(**update), RunnerSettings(**settings), Machine(prestarter=True), Purpose.RUN)
    assert not plan.reuse_baselines and not plan.remember_baselines


def test_the_group_is_left_out_of_a_request_that_has_none() -> None:
    """A request without a group is byte for byte what it was before the field (runners.contract_version)."""
    assert "baseline_group" not in _request(baseline_group="").model_dump_json()
    assert '"baseline_group":"account 1"' in _request().model_dump_json()


# ---- the keeper and the executor ---------------------------------------------------------------------------------
def test_the_next_benchmark_run_of_the_group_reuses_every_baseline_and_says_when_they_were_timed(
    tmp_path: Path,
) -> None:
    settings, request = _settings(tmp_path), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    stamp = _calibrated(keeper, shape)
    asked, first = _timed_run(request, settings, keeper, shape, TIMED, calibration=stamp, timed_ago_s=20.0)
    assert asked == BOTH  # nothing kept yet: the evaluator times them
    assert [b.cached for b in first.baselines] == [False, False]
    timed = first.baselines[0].measured_at
    assert timed is not None and 19 < (datetime.now(UTC) - timed).total_seconds() < 25  # when timed, not the end
    asked, second = _timed_run(request, settings, keeper, shape, {}, calibration=stamp)  # the evaluator reports none
    assert asked == ()  # it is asked to time none
    assert [b.cached for b in second.baselines] == [True, True]
    for mine, kept in zip(second.baselines, first.baselines, strict=True):
        assert mine.case_medians_ns == kept.case_medians_ns and mine.speedups == kept.speedups and not mine.note
        assert mine.measured_at == kept.measured_at  # when they were timed
    assert second.baselines[0].speedups == [3.0, 4.0]


def test_a_ranked_run_times_its_own_baselines_even_when_fresh_ones_are_kept(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    keeper, shape = Prestarter(settings), _shape(_request())
    stamp = _calibrated(keeper, shape)
    _timed_run(_request(), settings, keeper, shape, TIMED, calibration=stamp)
    ranked = _request(Mode.RANKED, seed=7)
    asked, result = _timed_run(ranked, settings, keeper, shape, TIMED, calibration=stamp)
    assert asked == BOTH and [b.cached for b in result.baselines] == [False, False]


def test_the_age_limit_counts_from_when_the_baselines_were_timed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of 08fdeeb: a run that timed its baselines at its start and ended minutes later must not lend them
    for another minute from its end."""
    settings, request = _settings(tmp_path, baseline_reuse_s=60.0, calibration_reuse_s=3600.0), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    now = [10_000.0]
    monkeypatch.setattr(prestart_module.time, "monotonic", lambda: now[0])
    stamp = _calibrated(keeper, shape)
    _timed_run(request, settings, keeper, shape, TIMED, calibration=stamp, timed_ago_s=50.0)  # a long run's end
    now[0] += 9.0
    assert _timed_run(request, settings, keeper, shape, {}, calibration=stamp)[0] == ()  # 59 s after they were timed
    now[0] += 2.0  # 61 s
    asked, result = _timed_run(request, settings, keeper, shape, TIMED, calibration=stamp)
    assert asked == BOTH and [b.cached for b in result.baselines] == [False, False]


def test_another_group_gpu_problem_or_calibration_or_a_failed_baseline_reuses_nothing(tmp_path: Path) -> None:
    settings, request = _settings(tmp_path), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    stamp = _calibrated(keeper, shape)
    _timed_run(request, settings, keeper, shape, TIMED, calibration=stamp)
    assert _timed_run(request, settings, keeper, shape, {}, calibration=stamp)[0] == ()  # (it would, same group)
    other = _request(baseline_group="account 2")  # another account's run never takes this one's
    assert _timed_run(other, settings, keeper, shape, TIMED, calibration=stamp)[0] == BOTH
    assert _timed_run(request, settings, keeper, _shape(request, OTHER), TIMED, calibration=stamp)[0] == BOTH
    changed = _request(files={"reference.py": "x = 2\n"})  # another reference: another key
    assert _timed_run(changed, settings, keeper, shape, TIMED, calibration=stamp)[0] == BOTH
    slower = _request(timing=TimingSettings(max_time_s=0.5))  # other timing settings: another key
    assert _timed_run(slower, settings, keeper, shape, TIMED, calibration=stamp)[0] == BOTH
    # A run that takes a fresh calibration (none reused) times its own; so does one whose reused calibration is not
    # the one the kept baselines were corrected with.
    assert _timed_run(request, settings, keeper, shape, TIMED, calibration=None)[0] == BOTH
    assert _timed_run(request, settings, keeper, shape, TIMED, calibration=stamp + 1.0)[0] == BOTH
    # A baseline that failed is never kept; one missing means all are timed (all or none).
    fresh = Prestarter(settings)
    fresh_stamp = _calibrated(fresh, shape)
    broken = {**TIMED, "fast": [RBaseline(label="fast", index=0, error="it raised")]}
    _timed_run(request, settings, fresh, shape, broken, calibration=fresh_stamp)
    assert _timed_run(request, settings, fresh, shape, TIMED, calibration=fresh_stamp)[0] == BOTH


def test_the_setting_off_keeps_nothing_and_expired_entries_are_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = _request()
    kept = TimedBaseline(TIMED["reference"], datetime.now(UTC) - timedelta(seconds=1), 100.0, 50.0)
    off = Prestarter(_settings(tmp_path, baseline_reuse_s=0))
    off.remember_baselines(_shape(request), "account 1", "k", kept)
    assert off.baselines(_shape(request), "account 1", "k", 50.0) is None
    keeper = Prestarter(_settings(tmp_path, baseline_reuse_s=60.0))
    monkeypatch.setattr(prestart_module.time, "monotonic", lambda: 120.0)
    keeper.remember_baselines(_shape(request), "account 1", "old", kept)
    monkeypatch.setattr(prestart_module.time, "monotonic", lambda: 170.0)  # the first is 70 s old now
    keeper.remember_baselines(_shape(request), "account 1", "new", replace(kept, monotonic=165.0))
    assert [k[2] for k in keeper._baselines] == ["new"]  # the worker keeps no more than what it may still lend


@pytest.mark.parametrize(("mode", "group"), [(Mode.BENCHMARK, "account 42"), (Mode.RANKED, ""), (Mode.TEST, "")])
def test_the_service_groups_a_benchmark_run_by_its_account_only(mode: Mode, group: str) -> None:
    """A worker's benchmark-mode runs lend each other baselines only within one account: no one's run (a candidate
    that heats the GPU before the next run's baselines, say) decides another account's speedups."""
    from types import SimpleNamespace

    from leaderboards.recording import _baseline_group

    assert _baseline_group(SimpleNamespace(user_id=42), mode) == group  # type: ignore[arg-type]
