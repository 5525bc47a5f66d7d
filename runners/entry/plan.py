"""Deciding a run, apart from doing it: what the trusted parent will do with one request, as a frozen plan.

``plan_run`` turns the request, the runner's settings and what this machine has (``Machine``) into a ``RunPlan``:
warm or cold, one rank or several, which profiler, which baselines the evaluator times, the job's batches and
limits, whether a provenance pass follows. It reads no file, starts no process and draws no secret, so each
setting's and each flag's effect is a unit test without processes (``tests/runners/test_run_plan.py``).
``runners.entry._run`` (the executor) carries the plan out and decides nothing the plan could have: the rule is
"decide in the plan, do in the executor" (docs/architecture.md, "Plan, then run").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from runners import baselines
from runners.contract import REFERENCE_BASELINE, BaselineSpec, Mode, RunRequest
from runners.provenance import CANNOT_CHECK
from runners.settings import RunnerSettings

TIMED_MODES = (Mode.BENCHMARK, Mode.RANKED)


class Purpose(StrEnum):
    """Why the entry runs: a submission's run, the problem's reference check (no submission process), or the
    provenance pass after a timed run (the submission again, under Nsight Compute, untimed)."""

    RUN = "run"
    REFERENCE = "reference"
    PROVENANCE = "provenance"


@dataclass(frozen=True)
class Machine:
    """What this runner has, as far as a plan depends on it (the executor finds it out, once per run)."""

    prestarter: bool = False
    """A long-lived runner's pre-started sets are at hand (``runners.entry.prestart.Prestarter``)."""
    cannot_record: str = ""
    """Why this runner cannot record a GPU call's kernels with Nsight Compute ('' when it can;
    ``runners.entry.profiling.cannot_record_kernels``)."""


@dataclass(frozen=True)
class RunPlan:
    """Everything the executor does that depends on the request, the settings and the machine, decided up front."""

    purpose: Purpose
    ranks: bool
    """Several ranks (``request.world_size`` > 1, not a reference check): one GPU and one evaluator per rank
    (``RankSession``), no baselines, no pre-started set, no profiler, no provenance pass."""
    on_gpu: bool
    """The request's device is a GPU: the CUDA allocator is bound, the end clock is read."""
    admit: bool
    """Check the file (``admission.check_submission``) and find its language's headers before anything starts."""
    refusal: str
    """Why this runner refuses the run after admission, before anything starts ('' none): a problem with a library
    policy needs a provenance pass this runner cannot make (the runner's lack: retried elsewhere)."""
    warm: bool
    """Take a pre-started set of the run's shape (if one waits) and pre-start the next run's after the hand-over."""
    helpers: tuple[str, ...]
    """The evaluator's helper processes the next pre-started set starts with (only where ``warm``)."""
    reuse_calibration: bool
    """Hand the evaluator this GPU's recent calibration from the pre-started sets' keeper, where it has one."""
    remember_calibration: bool
    """Keep the calibration this run's evaluator took, for the next runs on its GPU (where none was reused)."""
    reuse_baselines: bool
    """Take the baselines' timings from the pre-started sets' keeper where it has every one of them, fresh
    (``RunnerSettings.baseline_reuse_s``), timed for the request's ``baseline_group`` under the calibration this run
    reuses, instead of timing them: benchmark mode on a GPU only. A ranked run always times its own (issue 31: a
    competition's speedups rest on the run's own conditions)."""
    remember_baselines: bool
    """Keep the baselines this run timed for the next benchmark-mode runs of its group on its GPU."""
    profiler: Literal["none", "profile", "provenance"]
    """What wraps the submission process: nothing, profile mode's choice (Nsight Compute where it can, else the
    torch profiler's table), or the provenance pass's Nsight Compute."""
    baselines: tuple[BaselineSpec, ...]
    """The baselines the evaluator times before the submission loads, reports with speedups, and caches."""
    job_baselines: tuple[tuple[str, str], ...]
    """(label, function) of the baselines the job names: those timed, or a reference check's (without the reference
    itself), which the evaluator only runs."""
    job_mode: str
    job_device: Literal["cuda", "cpu"]
    draw_secret: bool
    """Draw a secret for the job (a run of several ranks without a seed); else the request's seed is the secret."""
    start_submission: bool
    """Start the submission process (not for a reference check)."""
    reference_medians: bool
    """Bound the steps by the reference's medians in this runner's cache (not for a reference check)."""
    startup_s: float
    """The platform's start-up limit (``RunnerSettings.startup_timeout_s``)."""
    max_batch_calls: int
    heap_bytes: int | None
    baselines_budget_s: float
    provenance: bool
    """After a passing run, a provenance pass records its kernels (``runners.entry._with_provenance``)."""


def plan_run(request: RunRequest, settings: RunnerSettings, machine: Machine, purpose: Purpose) -> RunPlan:
    """The plan of one run of ``request`` on this runner. Pure: no file, process, clock or secret."""
    reference = purpose is Purpose.REFERENCE
    ranks = request.world_size > 1 and not reference
    to_time = timed_baselines(request, settings, purpose)
    warm = machine.prestarter and settings.prestart and not reference and request.mode is not Mode.PROFILE
    warm = warm and not ranks
    one_rank_timed = request.mode in TIMED_MODES and not reference and not ranks
    kernels = records_kernels(request, purpose, ranks)
    gpu_baselines = machine.prestarter and request.device != "cpu" and one_rank_timed and bool(to_time)
    # (kept baselines are paired with the calibration they were corrected with: no calibration kept, none lent)
    gpu_baselines = gpu_baselines and bool(request.baseline_group) and settings.calibration_reuse_s > 0
    return RunPlan(
        purpose=purpose,
        ranks=ranks,
        on_gpu=request.device != "cpu",
        admit=not reference,
        refusal=_refusal(request, machine) if kernels else "",
        warm=warm,
        helpers=next_set_helpers(request, to_time) if warm else (),
        reuse_calibration=machine.prestarter and request.device != "cpu" and one_rank_timed,
        remember_calibration=machine.prestarter and one_rank_timed,
        reuse_baselines=gpu_baselines and request.mode is Mode.BENCHMARK and settings.baseline_reuse_s > 0,
        remember_baselines=gpu_baselines and settings.baseline_reuse_s > 0,
        profiler=_profiler(request, purpose, ranks),
        baselines=to_time,
        job_baselines=_job_baselines(request, purpose, to_time),
        job_mode="reference" if reference else request.mode.value,
        job_device="cpu" if request.device == "cpu" else "cuda",
        draw_secret=ranks and request.seed is None,
        start_submission=not reference,
        reference_medians=not reference,
        startup_s=settings.startup_timeout_s,
        max_batch_calls=settings.max_batch_calls,
        heap_bytes=settings.gpu_heap_mb * 1024 * 1024 if settings.gpu_heap_mb else None,
        baselines_budget_s=baselines.BUDGET_S,
        provenance=kernels and wants_provenance(request, settings),
    )


def timed_baselines(request: RunRequest, settings: RunnerSettings, purpose: Purpose) -> tuple[BaselineSpec, ...]:
    """The baselines this run times (all of the request's): a timed run of one rank with benchmark cases on a runner
    that times baselines (``RunnerSettings.time_baselines``); none for a reference check or several ranks (the
    reference runs on one device; docs/multigpu.md)."""
    active = purpose is not Purpose.REFERENCE and request.world_size == 1
    timed = request.mode in TIMED_MODES and bool(request.benchmarks) and settings.time_baselines
    return tuple(request.baselines) if active and timed else ()


def _job_baselines(
    request: RunRequest, purpose: Purpose, to_time: tuple[BaselineSpec, ...]
) -> tuple[tuple[str, str], ...]:
    if purpose is not Purpose.REFERENCE:
        return tuple((spec.label, spec.function) for spec in to_time)
    if request.world_size != 1:
        return ()
    return tuple((spec.label, spec.function) for spec in request.baselines if spec != REFERENCE_BASELINE)


def next_set_helpers(request: RunRequest, to_time: tuple[BaselineSpec, ...]) -> tuple[str, ...]:
    """The helpers the next run's pre-started set starts with: those this run starts (the calibration echo of a timed
    run; the baseline process, and on the CPU its own echo, where this run times baselines)."""
    helpers: tuple[str, ...] = ("echo",) if request.mode in TIMED_MODES else ()
    if to_time:
        helpers += ("baseline", "echo-baselines") if request.device == "cpu" else ("baseline",)
    return helpers


def _profiler(request: RunRequest, purpose: Purpose, ranks: bool) -> Literal["none", "profile", "provenance"]:
    if purpose is Purpose.PROVENANCE:
        return "provenance"
    if ranks or request.mode is not Mode.PROFILE or request.device == "cpu":
        return "none"  # (outside profile mode or on the CPU, ncu has nothing to do: no note either)
    return "profile"


def records_kernels(request: RunRequest, purpose: Purpose, ranks: bool) -> bool:
    """Whether a run may get a provenance pass: a timed run of one rank on a GPU, with benchmark cases (issue 30)."""
    timed = request.mode in TIMED_MODES and bool(request.benchmarks)
    return timed and request.device != "cpu" and purpose is not Purpose.REFERENCE and not ranks


def wants_provenance(request: RunRequest, settings: RunnerSettings) -> bool:
    """Whether this runner gives a timed run the provenance pass (``RunnerSettings.provenance``): a problem with a
    library policy always gets it (unless it is off, when such a run is refused before it starts)."""
    if request.library_policy is not None:
        return settings.provenance != "off"
    return settings.provenance == "always" or (settings.provenance == "ranked" and request.mode is Mode.RANKED)


def _refusal(request: RunRequest, machine: Machine) -> str:
    """A problem with a library policy on a runner that cannot record kernels: the runner's lack (another runner may
    have ncu), told before anything starts."""
    if request.library_policy is None or not machine.cannot_record:
        return ""
    return f"{CANNOT_CHECK} ({machine.cannot_record}), which problem {request.problem!r} has"
