"""A long-lived runner's benchmark-mode runs on one GPU take the baselines the last run there timed, within
``RunnerSettings.baseline_reuse_s`` (issue 33's throughput: a program's candidates back to back), and say so; a
ranked run always times its own (issue 31). Without processes: the plan's flags, the keeper (``Prestarter``) and
the executor's baselines (``runners.entry._Baselines``)."""

from __future__ import annotations

import sys
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
    TimingStats,
    Verdict,
)
from runners.entry.plan import Machine, Purpose, plan_run
from runners.entry.prestart import Prestarter
from runners.entry.session import Shape, make_shape
from runners.gpus import Gpu
from runners.ipc.protocol import RBaseline
from runners.settings import RunnerSettings

FAST = BaselineSpec(label="fast", function="fast_kernel")
H200 = Gpu(index=0, uuid="GPU-aaaa", name="NVIDIA H200", minor=0)
OTHER = Gpu(index=1, uuid="GPU-bbbb", name="NVIDIA H200", minor=1)


def _request(mode: Mode = Mode.BENCHMARK, device: str = "cuda", **update: Any) -> RunRequest:
    fields: dict[str, Any] = {
        "problem": "p", "lang": "py", "mode": mode, "files": {"reference.py": "x = 1\n"}, "device": device,
        "submission": SubmissionFile(name="s.py", content=b"def custom_kernel(data):\n    return data\n"),
        "tests": [{"n": 1, "seed": 1}], "benchmarks": [{"n": 2, "seed": 2}, {"n": 3, "seed": 3}],
        "baselines": [REFERENCE_BASELINE, FAST],
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


def _timed_run(request: RunRequest, settings: RunnerSettings, keeper: Prestarter, shape: Shape,
               reports: dict[str, list[RBaseline]]) -> tuple[tuple[tuple[str, str], ...], RunResult]:  # fmt: skip
    """What the executor does with one run's baselines: asks the keeper, tells the evaluator what to time, and
    finishes the result from what the evaluator reported (``reports``)."""
    plan = plan_run(request, settings, Machine(prestarter=True), Purpose.RUN)
    timed = entry._Baselines(request, SYSTEM, settings, plan.baselines)
    if plan.remember_baselines:
        timed.keep_in(keeper, shape, reuse=plan.reuse_baselines)
    asked = () if timed.reused else plan.job_baselines  # (as the executor gives the job: runners.entry)
    return asked, timed.finish(_passed(request), reports)


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
    [({"benchmarks": []}, {}), ({}, {"time_baselines": False}), ({}, {"baseline_reuse_s": 0})],
)
def test_no_reuse_without_baselines_or_with_the_setting_off(update: dict[str, Any], settings: dict[str, Any]) -> None:
    plan = plan_run(_request(**update), RunnerSettings(**settings), Machine(prestarter=True), Purpose.RUN)
    assert not plan.reuse_baselines and not plan.remember_baselines


# ---- the keeper and the executor ---------------------------------------------------------------------------------
def test_the_next_benchmark_run_on_the_gpu_reuses_every_baseline_and_says_when_they_were_timed(
    tmp_path: Path,
) -> None:
    settings, request = _settings(tmp_path), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    asked, first = _timed_run(request, settings, keeper, shape, TIMED)
    assert asked == (("reference", "ref_kernel"), ("fast", "fast_kernel"))  # nothing kept yet: the evaluator times
    assert [b.cached for b in first.baselines] == [False, False]
    asked, second = _timed_run(request, settings, keeper, shape, {})  # the evaluator reports none
    assert asked == ()  # it is asked to time none
    assert [b.cached for b in second.baselines] == [True, True]
    for mine, kept in zip(second.baselines, first.baselines, strict=True):
        assert mine.case_medians_ns == kept.case_medians_ns and mine.speedups == kept.speedups and not mine.note
        assert mine.measured_at == kept.measured_at  # when they were timed, not now
    assert second.baselines[0].speedups == [3.0, 4.0]


def test_a_ranked_run_times_its_own_baselines_even_when_fresh_ones_are_kept(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    keeper, shape = Prestarter(settings), _shape(_request())
    _timed_run(_request(), settings, keeper, shape, TIMED)
    ranked = _request(Mode.RANKED, seed=7)
    asked, result = _timed_run(ranked, settings, keeper, shape, TIMED)
    assert asked == (("reference", "ref_kernel"), ("fast", "fast_kernel"))
    assert [b.cached for b in result.baselines] == [False, False]


def test_baselines_older_than_the_limit_are_timed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, request = _settings(tmp_path, baseline_reuse_s=60.0), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    now = [1000.0]
    monkeypatch.setattr(prestart_module.time, "monotonic", lambda: now[0])
    _timed_run(request, settings, keeper, shape, TIMED)
    now[0] += 59.0
    assert _timed_run(request, settings, keeper, shape, {})[0] == ()
    now[0] += 2.0  # 61 s after they were timed
    asked, result = _timed_run(request, settings, keeper, shape, TIMED)
    assert asked != () and [b.cached for b in result.baselines] == [False, False]


def test_another_gpu_another_problem_or_a_failed_baseline_reuses_nothing(tmp_path: Path) -> None:
    settings, request = _settings(tmp_path), _request()
    keeper = Prestarter(settings)
    _timed_run(request, settings, keeper, _shape(request), TIMED)
    assert _timed_run(request, settings, keeper, _shape(request, OTHER), TIMED)[0] != ()  # another GPU
    changed = _request(benchmarks=[{"n": 2, "seed": 2}, {"n": 5, "seed": 3}])  # another case: another key
    assert _timed_run(changed, settings, keeper, _shape(changed), TIMED)[0] != ()
    # A baseline that failed is never kept; one missing means all are timed (all or none).
    fresh = Prestarter(settings)
    broken = {**TIMED, "fast": [RBaseline(label="fast", index=0, error="it raised")]}
    _timed_run(request, settings, fresh, _shape(request), broken)
    assert _timed_run(request, settings, fresh, _shape(request), TIMED)[0] == (
        ("reference", "ref_kernel"), ("fast", "fast_kernel"))  # fmt: skip


def test_the_setting_off_keeps_nothing(tmp_path: Path) -> None:
    settings, request = _settings(tmp_path, baseline_reuse_s=0), _request()
    keeper, shape = Prestarter(settings), _shape(request)
    keeper.remember_baselines(shape, "k", TIMED["reference"], datetime.now(UTC) - timedelta(seconds=1))
    assert keeper.baselines(shape, "k") is None
