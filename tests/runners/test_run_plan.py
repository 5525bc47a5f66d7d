"""The plan of a run (runners/entry/plan.py), without processes: each setting's and each flag's effect on what the
trusted parent decides (warm or cold, ranks, profiler, baselines, batches, secret, limits, the provenance pass, a
refusal), and that the executor (runners/entry/__init__.py) carries the plan into the job and the session."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import runners.entry as entry
from runners.contract import (
    BASELINES_BUDGET_S,
    REFERENCE_BASELINE,
    BaselineSpec,
    Mode,
    RunRequest,
    SubmissionFile,
    Verdict,
)
from runners.entry.plan import Machine, Purpose, RunPlan, plan_run
from runners.entry.session import SessionSpec
from runners.provenance import CANNOT_CHECK, LibraryPolicy
from runners.settings import RunnerSettings

FAST = BaselineSpec(label="fast", function="fast_kernel")
NO_NCU = "Nsight Compute (ncu) is not installed on this runner"


def _request(mode: Mode = Mode.BENCHMARK, device: str = "cuda", **update: Any) -> RunRequest:
    fields: dict[str, Any] = {
        "problem": "p", "lang": "py", "mode": mode, "files": {}, "device": device,
        "submission": SubmissionFile(name="s.py", content=b"def custom_kernel(data):\n    return data\n"),
        "tests": [{"n": 1, "seed": 1}], "benchmarks": [{"n": 2, "seed": 2}], "baselines": [REFERENCE_BASELINE, FAST],
    }  # fmt: skip
    return RunRequest(**(fields | update))


def _plan(
    request: RunRequest | None = None,
    purpose: Purpose = Purpose.RUN,
    *,
    prestarter: bool = False,
    cannot_record: str = "",
    **settings: Any,
) -> RunPlan:
    return plan_run(request or _request(), RunnerSettings(**settings), Machine(prestarter, cannot_record), purpose)


# ---- an ordinary run, and what each purpose changes -------------------------------------------------------------
def test_an_ordinary_test_run_starts_cold_with_nothing_around_it() -> None:
    plan = _plan(_request(Mode.TEST, "cpu"))
    assert (plan.ranks, plan.warm, plan.on_gpu, plan.profiler, plan.baselines) == (False, False, False, "none", ())
    assert plan.admit and plan.start_submission and plan.reference_medians and not plan.refusal
    assert (plan.job_mode, plan.job_device, plan.job_baselines, plan.draw_secret) == ("test", "cpu", (), False)
    assert not plan.provenance and not plan.reuse_calibration and not plan.remember_calibration


def test_a_reference_check_admits_no_file_starts_no_submission_and_reads_no_cached_bounds() -> None:
    plan = _plan(_request(Mode.BENCHMARK, "cuda"), Purpose.REFERENCE, prestarter=True, prestart=True)
    assert not plan.admit and not plan.start_submission and not plan.reference_medians
    assert plan.job_mode == "reference" and not plan.warm and plan.baselines == ()
    # The evaluator runs (never times) the problem's other baselines: the reference is the check itself.
    assert plan.job_baselines == (("fast", "fast_kernel"),)
    assert not plan.provenance and not plan.refusal


def test_a_reference_check_of_several_ranks_runs_one_evaluator_without_baselines() -> None:
    plan = _plan(_request(Mode.BENCHMARK, "cuda", world_size=2), Purpose.REFERENCE)
    assert not plan.ranks and plan.job_baselines == () and not plan.draw_secret


def test_the_provenance_pass_wraps_the_submission_in_its_own_ncu_and_gets_no_pass_of_its_own() -> None:
    request = _request(Mode.PROFILE, "cuda", tests=[], baselines=[])
    plan = _plan(request, Purpose.PROVENANCE, prestarter=True, prestart=True)
    assert plan.profiler == "provenance" and plan.job_mode == "profile" and plan.admit and plan.start_submission
    assert not plan.warm and not plan.provenance and plan.baselines == ()


# ---- warm or cold ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("prestarter", "setting", "mode", "world_size", "purpose", "warm"),
    [
        (True, True, Mode.BENCHMARK, 1, Purpose.RUN, True),
        (True, True, Mode.TEST, 1, Purpose.RUN, True),
        (False, True, Mode.BENCHMARK, 1, Purpose.RUN, False),  # no pre-started sets at hand (Modal, GitHub)
        (True, False, Mode.BENCHMARK, 1, Purpose.RUN, False),  # KERNELCUP_PRESTART off
        (True, True, Mode.PROFILE, 1, Purpose.RUN, False),  # Nsight Compute in front: always cold
        (True, True, Mode.BENCHMARK, 2, Purpose.RUN, False),  # several ranks: always cold
        (True, True, Mode.BENCHMARK, 1, Purpose.REFERENCE, False),
    ],
)
def test_which_runs_take_a_pre_started_set(
    prestarter: bool, setting: bool, mode: Mode, world_size: int, purpose: Purpose, warm: bool
) -> None:
    plan = _plan(_request(mode, world_size=world_size), purpose, prestarter=prestarter, prestart=setting)
    assert plan.warm is warm


@pytest.mark.parametrize(
    ("mode", "device", "time_baselines", "helpers"),
    [
        (Mode.BENCHMARK, "cuda", True, ("echo", "baseline")),
        (Mode.RANKED, "cpu", True, ("echo", "baseline", "echo-baselines")),  # the CPU's baselines: an echo of theirs
        (Mode.RANKED, "cuda", False, ("echo",)),
        (Mode.TEST, "cuda", True, ()),
    ],
)
def test_the_next_pre_started_set_starts_the_helpers_this_run_starts(
    mode: Mode, device: str, time_baselines: bool, helpers: tuple[str, ...]
) -> None:
    plan = _plan(_request(mode, device), prestarter=True, prestart=True, time_baselines=time_baselines)
    assert plan.warm and plan.helpers == helpers


def test_a_cold_run_pre_starts_nothing() -> None:
    assert _plan(_request(Mode.RANKED), prestart=True).helpers == ()


@pytest.mark.parametrize(
    ("mode", "device", "world_size", "reuse", "remember"),
    [
        (Mode.RANKED, "cuda", 1, True, True),
        (Mode.BENCHMARK, "cuda", 1, True, True),
        (Mode.BENCHMARK, "cpu", 1, False, True),  # (a CPU run's evaluator reports no calibration to keep)
        (Mode.TEST, "cuda", 1, False, False),
        (Mode.PROFILE, "cuda", 1, False, False),
        (Mode.RANKED, "cuda", 2, False, False),
    ],
)
def test_which_runs_reuse_and_keep_a_gpu_calibration(
    mode: Mode, device: str, world_size: int, reuse: bool, remember: bool
) -> None:
    plan = _plan(_request(mode, device, world_size=world_size), prestarter=True)
    assert (plan.reuse_calibration, plan.remember_calibration) == (reuse, remember)
    assert not _plan(_request(mode, device, world_size=world_size)).reuse_calibration  # no keeper, nothing to reuse


# ---- ranks, secret -----------------------------------------------------------------------------------------------
def test_several_ranks_time_no_baselines_and_draw_a_secret_where_the_request_has_no_seed() -> None:
    plan = _plan(_request(Mode.RANKED, world_size=2, seed=None))
    assert plan.ranks and plan.baselines == () and plan.job_baselines == () and plan.draw_secret
    assert plan.profiler == "none" and not plan.provenance
    assert not _plan(_request(Mode.RANKED, world_size=2, seed=7)).draw_secret
    assert not _plan(_request(Mode.RANKED, seed=None)).draw_secret  # one rank: the request's seed, even None


def test_a_profile_run_of_several_ranks_has_no_profiler() -> None:
    assert _plan(_request(Mode.PROFILE, world_size=2)).profiler == "none"


# ---- profiler ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "device", "profiler"),
    [(Mode.PROFILE, "cuda", "profile"), (Mode.PROFILE, "cpu", "none"), (Mode.BENCHMARK, "cuda", "none")],
)
def test_profile_mode_on_a_gpu_asks_for_a_profiler(mode: Mode, device: str, profiler: str) -> None:
    assert _plan(_request(mode, device)).profiler == profiler


# ---- baselines ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [Mode.BENCHMARK, Mode.RANKED])
def test_a_timed_run_times_every_baseline_of_the_request(mode: Mode) -> None:
    plan = _plan(_request(mode, "cpu"))
    assert plan.baselines == (REFERENCE_BASELINE, FAST)
    assert plan.job_baselines == (("reference", "ref_kernel"), ("fast", "fast_kernel"))


@pytest.mark.parametrize(
    ("update", "settings"),
    [
        ({"mode": Mode.TEST}, {}),
        ({"mode": Mode.PROFILE}, {}),
        ({"benchmarks": []}, {}),  # nothing to time them on
        ({}, {"time_baselines": False}),  # KERNELCUP_TIME_BASELINES off
    ],
)
def test_no_baselines_are_timed(update: dict[str, Any], settings: dict[str, Any]) -> None:
    plan = _plan(_request(**update), **settings)
    assert plan.baselines == () and plan.job_baselines == ()


# ---- limits and batches ------------------------------------------------------------------------------------------
def test_the_jobs_limits_and_batches_come_from_the_settings() -> None:
    plan = _plan(startup_timeout_s=33.0, max_batch_calls=8, gpu_heap_mb=1024)
    assert (plan.startup_s, plan.max_batch_calls, plan.heap_bytes) == (33.0, 8, 1024 * 1024 * 1024)
    assert plan.baselines_budget_s == BASELINES_BUDGET_S
    assert _plan().heap_bytes is None


@pytest.mark.parametrize(("device", "job_device"), [("cpu", "cpu"), ("cuda", "cuda"), ("H100", "cuda")])
def test_any_device_but_the_cpu_is_cuda_to_the_evaluator(device: str, job_device: str) -> None:
    plan = _plan(_request(Mode.TEST, device))
    assert plan.job_device == job_device and plan.on_gpu is (device != "cpu")


# ---- the provenance pass and the library policy ------------------------------------------------------------------
POLICY = LibraryPolicy(deny=["cublas"])


def test_a_policy_on_a_runner_that_cannot_record_kernels_is_refused_naming_why() -> None:
    plan = _plan(_request(Mode.RANKED, library_policy=POLICY), cannot_record=NO_NCU)
    assert plan.refusal == f"{CANNOT_CHECK} ({NO_NCU}), which problem 'p' has"


@pytest.mark.parametrize(
    ("update", "cannot_record"),
    [
        ({"library_policy": POLICY}, ""),  # it can record
        ({}, NO_NCU),  # no policy: a pass without ncu is the torch profiler's word, not a refusal
        ({"library_policy": POLICY, "device": "cpu"}, NO_NCU),  # no GPU call to record
        ({"library_policy": POLICY, "mode": Mode.TEST}, NO_NCU),  # untimed
        ({"library_policy": POLICY, "world_size": 2}, NO_NCU),
    ],
)
def test_no_refusal(update: dict[str, Any], cannot_record: str) -> None:
    assert _plan(_request(**({"mode": Mode.RANKED} | update)), cannot_record=cannot_record).refusal == ""


def test_a_refusal_does_not_touch_a_reference_check() -> None:
    plan = _plan(_request(Mode.RANKED, library_policy=POLICY), Purpose.REFERENCE, cannot_record=NO_NCU)
    assert plan.refusal == ""


@pytest.mark.parametrize(
    ("setting", "update", "wanted"),
    [
        ("ranked", {}, True),
        ("ranked", {"mode": Mode.BENCHMARK}, False),
        ("always", {"mode": Mode.BENCHMARK}, True),
        ("policy", {}, False),
        ("policy", {"library_policy": POLICY}, True),
        ("off", {"library_policy": POLICY}, False),
        ("always", {"device": "cpu"}, False),  # no GPU: nothing to record
        ("always", {"benchmarks": []}, False),
        ("always", {"world_size": 2}, False),
        ("always", {"mode": Mode.TEST}, False),
    ],
)
def test_which_runs_are_followed_by_a_provenance_pass(setting: str, update: dict[str, Any], wanted: bool) -> None:
    plan = _plan(_request(**({"mode": Mode.RANKED} | update)), provenance=setting)
    assert plan.provenance is wanted


# ---- the plan is a value -----------------------------------------------------------------------------------------
def test_a_plan_is_frozen_and_the_same_inputs_make_the_same_plan() -> None:
    plan = _plan(prestarter=True, prestart=True)
    assert plan == _plan(prestarter=True, prestart=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.warm = False  # type: ignore[misc]


# ---- the executor carries the plan out (no process starts: the session is stopped where it would) -----------------
class _Stop(Exception):
    pass


def _carried(monkeypatch: pytest.MonkeyPatch, name: str = "Session") -> dict[str, Any]:
    """What the executor hands the session (its spec, and the GPUs of a run of several ranks), the session never
    running."""
    seen: dict[str, Any] = {}

    def session(spec: SessionSpec, **kwargs: Any) -> None:
        seen.update(kwargs, spec=spec)
        raise _Stop

    monkeypatch.setattr(entry, name, session)
    return seen


def test_the_executor_gives_the_job_the_plans_baselines_secret_and_limits(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen = _carried(monkeypatch)
    settings = RunnerSettings(job_root=tmp_path, max_batch_calls=8, startup_timeout_s=33.0)
    result = entry.run_request(_request(Mode.RANKED, "cpu", seed=12345), settings=settings)
    assert "_Stop" in result.message and result.verdict is Verdict.INFRASTRUCTURE_ERROR
    spec = seen["spec"]
    job = spec.job
    assert job.mode == "ranked" and job.device == "cpu" and job.secret == 12345 and job.max_batch_calls == 8
    assert job.baselines == [("reference", "ref_kernel"), ("fast", "fast_kernel")] and job.profiler == "torch"
    assert spec.bounds is not None and job.time_limit_s == spec.bounds.total_s and spec.bounds.startup_s >= 33.0
    assert spec.shape.start_submission and spec.shape.prefix == () and not spec.shape.require_sandbox
    assert spec.prestarted is None and spec.after_handover is None
    assert list(tmp_path.iterdir()) == []  # the job folder is removed whatever happened


def test_the_executor_runs_a_reference_check_without_a_submission(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _carried(monkeypatch)
    entry.check_reference(_request(Mode.BENCHMARK, "cpu"))
    spec = seen["spec"]
    assert spec.job.mode == "reference" and spec.job.baselines == [("fast", "fast_kernel")]
    assert not spec.shape.start_submission


def test_the_executor_draws_a_secret_for_ranks_without_a_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _carried(monkeypatch, "RankSession")
    entry.run_request(_request(Mode.RANKED, "cpu", world_size=2, seed=None))
    job = seen["spec"].job
    assert isinstance(job.secret, str) and len(job.secret) == 32 and job.world_size == 2 and job.baselines == []
    assert seen["gpus"] is None  # (the CPU: no GPU per rank)


def test_the_executor_stops_before_any_process_where_the_plan_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    _carried(monkeypatch)
    monkeypatch.setattr(entry, "cannot_record_kernels", lambda settings: NO_NCU)
    monkeypatch.setattr(entry, "allocator_library", lambda cache: pytest.fail("nothing may be built"))
    result = entry.run_request(_request(Mode.RANKED, "cuda", library_policy=POLICY))
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR and result.fault == "runner"
    assert result.message == f"{CANNOT_CHECK} ({NO_NCU}), which problem 'p' has" and not result.system.ran


def test_a_refused_file_is_refused_before_the_plans_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The order of the stops is the executor's: admission first (the user's to fix), then the runner's lack."""
    monkeypatch.setattr(entry, "cannot_record_kernels", lambda settings: NO_NCU)
    empty = SubmissionFile(name="s.py", content=b"   \n")
    result = entry.run_request(_request(Mode.RANKED, "cuda", library_policy=POLICY, submission=empty))
    assert result.verdict is Verdict.REJECTED and "is empty" in result.message
