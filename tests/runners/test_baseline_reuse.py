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


def _timed_run(request: RunRequest, settings: RunnerSettings, keeper: Prestarter, shape: Shape,
               reports: dict[str, list[RBaseline]], *, timed_ago_s: float = 0.0,
               ) -> tuple[tuple[tuple[str, str], ...], RunResult]:  # fmt: skip
    """What the executor (``runners.entry._Execution``) does with one run's baselines, in its order: the calibration
    it reuses (if the keeper has one) and whether the run before on the GPU was of its group (``_start``); asking the
    keeper and telling the evaluator what to time (``_in_folder``); keeping a fresh calibration (``_after``); the
    result from what the evaluator reported (``reports``, the last of them ``timed_ago_s`` ago)."""
    plan = plan_run(request, settings, Machine(prestarter=True), Purpose.RUN)
    got = keeper.calibration_entry(shape) if plan.reuse_calibration else None
    stamp = got[2] if got is not None else None
    follows = keeper.follows(shape, request.baseline_group)
    timed = entry._Baselines(request, SYSTEM, settings, plan.baselines)
    if plan.remember_baselines:
        timed.keep_in(keeper, shape, request.baseline_group, reuse=plan.reuse_baselines, calibration=stamp,
                      keep=follows)  # fmt: skip
    asked = () if timed.reused else plan.job_baselines  # (as the executor gives the job)
    now = prestart_module.time.monotonic()
    if stamp is None and plan.remember_calibration:  # it calibrated: its calibration is kept for the next runs
        keeper.remember_calibration(shape, CALIBRATION, now - timed_ago_s - 1.0)
        stamp = keeper.calibration_stamp(shape)
    timed_at = now - timed_ago_s if reports else None
    return asked, timed.finish(_passed(request), reports, timed_at, stamp)


BOTH = (("reference", "ref_kernel"), ("fast", "fast_kernel"))


# ---- the plan ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "device", "world_size", "reuse", "remember"),
    [
        (Mode.BENCHMARK, "cuda", 1, True, True),
        (Mode.RANKED, "cuda", 1, False, True),  # times its own (the service gives a ranked run no group anyway)
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
        ({}, {"calibration_reuse_s": 0}),  # a kept baseline is paired with a kept calibration: none, none lent
    ],
)
def test_no_reuse_without_baselines_a_group_or_with_the_setting_off(
    update: dict[str, Any], settings: dict[str, Any]
) -> None:
    plan = plan_run(_request(**update), RunnerSettings(**settings), Machine(prestarter=True), Purpose.RUN)
    assert not plan.reuse_baselines and not plan.remember_baselines


def test_the_group_is_never_serialized_nor_in_the_digest() -> None:
    """A hint to a runner in the worker's own process: no remote runner sees it, and a request's digest (which a
    result echoes) is what it was before the field (re-review of fd6ed0d: older remote runners refuse unknown
    fields)."""
    grouped, plain = _request(), _request(baseline_group="")
    assert "baseline_group" not in grouped.model_dump_json() and grouped.digest() == plain.digest()
    assert grouped.baseline_group == "account 1" and grouped.model_copy().baseline_group == "account 1"


# ---- the keeper and the executor ---------------------------------------------------------------------------------
def test_the_runs_of_a_group_lend_each_other_every_baseline_and_say_when_they_were_timed(tmp_path: Path) -> None:
    settings, request = _settings(tmp_path), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    asked, first = _timed_run(request, settings, keeper, shape, TIMED)  # it follows no run of its group: keeps none
    assert asked == BOTH and [b.cached for b in first.baselines] == [False, False]
    asked, second = _timed_run(request, settings, keeper, shape, TIMED, timed_ago_s=20.0)
    assert asked == BOTH  # nothing kept yet: the evaluator times them, and this time they are kept
    timed = second.baselines[0].measured_at
    assert timed is not None and 19 < (datetime.now(UTC) - timed).total_seconds() < 25  # when timed, not the end
    asked, third = _timed_run(request, settings, keeper, shape, {})  # the evaluator reports none
    assert asked == ()  # it is asked to time none
    assert [b.cached for b in third.baselines] == [True, True]
    for mine, kept in zip(third.baselines, second.baselines, strict=True):
        assert mine.case_medians_ns == kept.case_medians_ns and mine.speedups == kept.speedups and not mine.note
        assert mine.measured_at == kept.measured_at  # when they were timed
    assert third.baselines[0].speedups == [3.0, 4.0]


def test_baselines_timed_right_after_another_accounts_run_are_not_kept(tmp_path: Path) -> None:
    """Re-review of fd6ed0d: a candidate of account B that heats the GPU just before account A's run must not set the
    baselines lent to A's next runs; baselines kept earlier, after A's own run, are still A's to use."""
    settings, a, b = _settings(tmp_path), _request(), _request(baseline_group="account 2")
    keeper, shape = Prestarter(settings), _shape(a)
    _timed_run(b, settings, keeper, shape, TIMED)
    _timed_run(a, settings, keeper, shape, TIMED)  # after B's run: timed, not kept
    assert _timed_run(a, settings, keeper, shape, TIMED)[0] == BOTH  # so this one times them (and keeps them)
    _timed_run(b, settings, keeper, shape, TIMED)
    assert _timed_run(a, settings, keeper, shape, {})[0] == ()  # A's own, kept after A's run, are lent again
    ranked = _request(Mode.RANKED, seed=7, baseline_group="")
    _timed_run(ranked, settings, keeper, shape, TIMED)  # a run of no group counts as another's
    fresh = Prestarter(settings)
    _timed_run(ranked, settings, fresh, shape, TIMED)
    _timed_run(a, settings, fresh, shape, TIMED)
    assert _timed_run(a, settings, fresh, shape, TIMED)[0] == BOTH


def test_a_ranked_run_times_its_own_baselines_even_when_fresh_ones_are_kept(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    keeper, shape = Prestarter(settings), _shape(_request())
    for _ in range(2):
        _timed_run(_request(), settings, keeper, shape, TIMED)
    ranked = _request(Mode.RANKED, seed=7)
    asked, result = _timed_run(ranked, settings, keeper, shape, TIMED)
    assert asked == BOTH and [b.cached for b in result.baselines] == [False, False]


def test_the_age_limits_count_from_when_the_baselines_and_the_calibration_were_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of 08fdeeb: a run that timed its baselines at its start and ended minutes later must not lend them
    for another minute from its end (re-review: nor its calibration, which they are paired with)."""
    settings, request = _settings(tmp_path, baseline_reuse_s=60.0, calibration_reuse_s=60.0), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    now = [10_000.0]
    monkeypatch.setattr(prestart_module.time, "monotonic", lambda: now[0])
    _timed_run(request, settings, keeper, shape, TIMED)
    keeper._calibrations.clear()  # the next run calibrates afresh, 40 s into a long run
    _timed_run(request, settings, keeper, shape, TIMED, timed_ago_s=40.0)  # baselines at -40 s, calibration -41 s
    now[0] += 18.0
    assert _timed_run(request, settings, keeper, shape, {})[0] == ()  # 58 s after they were timed
    now[0] += 3.0  # 61 s: both expired
    assert keeper.calibration(shape) is None
    asked, result = _timed_run(request, settings, keeper, shape, TIMED)
    assert asked == BOTH and [b.cached for b in result.baselines] == [False, False]


def test_another_group_gpu_problem_or_calibration_or_a_failed_baseline_reuses_nothing(tmp_path: Path) -> None:
    settings, request = _settings(tmp_path), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    for _ in range(2):
        _timed_run(request, settings, keeper, shape, TIMED)
    assert _timed_run(request, settings, keeper, shape, {})[0] == ()  # (it would, same group)
    other = _request(baseline_group="account 2")  # another account's run never takes this one's
    assert _timed_run(other, settings, keeper, shape, TIMED)[0] == BOTH
    assert _timed_run(request, settings, keeper, _shape(request, OTHER), TIMED)[0] == BOTH
    changed = _request(files={"reference.py": "x = 2\n"})  # another reference: another key
    assert _timed_run(changed, settings, keeper, shape, TIMED)[0] == BOTH
    slower = _request(timing=TimingSettings(max_time_s=0.5))  # other timing settings: another key
    assert _timed_run(slower, settings, keeper, shape, TIMED)[0] == BOTH
    # A run that takes a fresh calibration (none to reuse) times its own, and those are then paired with it.
    keeper._calibrations.clear()
    assert _timed_run(request, settings, keeper, shape, TIMED)[0] == BOTH
    assert _timed_run(request, settings, keeper, shape, {})[0] == ()
    # A baseline that failed is never kept; one missing means all are timed (all or none).
    fresh = Prestarter(settings)
    broken = {**TIMED, "fast": [RBaseline(label="fast", index=0, error="it raised")]}
    for _ in range(2):
        _timed_run(request, settings, fresh, shape, broken)
    assert _timed_run(request, settings, fresh, shape, TIMED)[0] == BOTH


def test_a_baseline_is_lent_only_under_the_calibration_it_was_corrected_with(tmp_path: Path) -> None:
    settings, request = _settings(tmp_path), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    stamp = 500.0
    kept = TimedBaseline(TIMED["reference"], datetime.now(UTC), prestart_module.time.monotonic(), stamp)
    keeper.remember_baselines(shape, "account 1", "k", kept)
    assert keeper.baselines(shape, "account 1", "k", stamp) is kept
    assert keeper.baselines(shape, "account 1", "k", stamp + 1.0) is None
    assert keeper.baselines(shape, "account 1", "k", None) is None  # a run that calibrates afresh
    assert keeper.baselines(shape, "account 2", "k", stamp) is None


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
    """A worker's benchmark-mode runs lend each other baselines only within one account."""
    from types import SimpleNamespace

    from leaderboards.recording import _baseline_group

    assert _baseline_group(SimpleNamespace(user_id=42), mode) == group  # type: ignore[arg-type]


def test_a_run_of_several_ranks_counts_on_every_gpu_it_used(tmp_path: Path) -> None:
    """Account B's two-rank run on GPUs 1 and 0 comes between two of A's runs on GPU 0: A's next run there does not
    follow its own."""
    keeper, request = Prestarter(_settings(tmp_path)), _request()
    gpu0, gpu1 = _shape(request), _shape(request, OTHER)
    assert not keeper.follows(gpu0, "account 1")  # nothing ran before it
    assert keeper.follows(gpu0, "account 1")
    keeper.follows(gpu1, "account 2", others=(H200.uuid,))
    assert not keeper.follows(gpu0, "account 1")
    assert keeper.follows(gpu0, "account 1")
    assert not keeper.follows(gpu0, "")  # a run of no group follows nothing
