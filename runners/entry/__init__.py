"""Run one request on this machine and return its result: the runner's entry point and trusted parent.

    python -m runners.entry REQUEST.json RESULT.json [--require-sandbox]     # '-' for stdin / stdout

Every launcher ends here (the local launcher in-process, Modal and GitHub Actions through the CLI). It never runs
user code and never imports PyTorch. It refuses files it cannot evaluate (``admission``), writes one folder for
the trusted evaluator (``runners.oracle``: the problem's reference, the secret, the checks, the clock) and one for
the submission process (``runners.submission``: the user's file), starts each in a sandbox of its own
(``session``), reads the evaluator's report, and turns it into the verdict, the statistics and the score
(``verdict``). ``run_request`` never raises for anything a submission does; an unexpected failure of its own
becomes ``Verdict.INFRASTRUCTURE_ERROR``. docs/anti-cheat.md draws the boundary.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runners import baselines, sysinfo
from runners.contract import (
    REFERENCE_BASELINE,
    BaselineSpec,
    BenchmarkResult,
    Mode,
    Phase,
    ProgressEvent,
    RunRequest,
    RunResult,
    SystemInfo,
    TestResult,
    Verdict,
)
from runners.devices import peaks_for
from runners.entry.admission import (
    JobDirs,
    NotOffered,
    Rejected,
    allocator_library,
    check_submission,
    language_headers,
    new_job_root,
    write_job,
)
from runners.entry.clock import OVERLOADED, Bounds, bounds_for
from runners.entry.plan import Machine, Purpose, RunPlan, plan_run, wants_provenance
from runners.entry.prestart import Prestarter, TimedBaseline
from runners.entry.profiling import (
    NcuOutcome,
    ProfilerChoice,
    cannot_record_kernels,
    choose_profiler,
    collect,
    provenance_profiler,
)
from runners.entry.ranks import RankSession, rank_gpus
from runners.entry.session import (
    REPO_ROOT,
    Outcomes,
    ProgressCallback,
    ReportError,
    Session,
    SessionSpec,
    Shape,
    make_shape,
)
from runners.entry.session import Launch as ProcessSet
from runners.entry.verdict import blame_the_floor, build_result
from runners.gpus import Gpu
from runners.ipc.protocol import ClockCalibration, Job, RBaseline, RProfile
from runners.oracle.base import derive_seed
from runners.provenance import MARKER, REJECTION, Launch, Provenance, parse_torch_tables, record
from runners.provenance_digest import digest
from runners.sandbox.remove import remove_tree
from runners.settings import RunnerSettings
from runners.submission.languages import HEADERS_ENV, Headers
from runners.validation import bound_profile

__all__ = ["OVERLOADED", "REPO_ROOT", "check_reference", "derive_seed", "main", "run_request"]


@dataclass(frozen=True)
class _Context:
    """What the caller gives a run besides the request and the settings: where its progress goes, whether a sandbox
    is required, the event that cancels it, its GPU (or a run of several ranks' GPUs), a long-lived runner's
    pre-started sets. The plan reads only whether there are pre-started sets; the executor uses the rest."""

    on_progress: ProgressCallback | None = None
    require_sandbox: bool = False
    cancel: threading.Event | None = None
    gpu: Gpu | None = None
    gpus: list[Gpu] | None = None
    prestart: Prestarter | None = None


def run_request(
    request: RunRequest,
    on_progress: ProgressCallback | None = None,
    *,
    settings: RunnerSettings | None = None,
    require_sandbox: bool = False,
    cancel: threading.Event | None = None,
    gpu: Gpu | None = None,
    gpus: list[Gpu] | None = None,
    prestart: Prestarter | None = None,
) -> RunResult:
    """Evaluate ``request`` on this machine. Never raises for submission faults.

    Setting ``cancel`` (from any thread) kills the run's processes at once; the result is then an infrastructure
    error saying so, which nothing should store as the submission's outcome. ``gpu``: the one GPU the run may use
    (its processes see only it; ``runners.gpus``); None: the machine's GPUs as they are. ``gpus``: a run of
    ``request.world_size`` ranks, one GPU each (docs/multigpu.md); None: the first of the machine's usable GPUs.
    ``prestart``: a long-lived runner's pre-started sets (``runners.entry.prestart``): a run of one rank takes the
    one waiting for its shape, if any, and starts the next."""
    context = _Context(on_progress, require_sandbox, cancel, gpu, gpus, prestart)
    return _timed(request, on_progress, lambda: _run(request, settings or RunnerSettings(), context))


def check_reference(request: RunRequest, *, settings: RunnerSettings | None = None) -> RunResult:
    """Run the problem's own reference on ``request.tests[0]`` in the sandboxed evaluator: generate_input ->
    ref_kernel -> check_implementation. ACCEPTED when the reference passes its own check; otherwise an
    infrastructure error (or wrong answer) whose message says what the problem did wrong. No submission runs."""
    return _timed(request, None, lambda: _run(request, settings or RunnerSettings(), _Context(), reference_only=True))


def _timed(request: RunRequest, on_progress: ProgressCallback | None, body: Callable[[], RunResult]) -> RunResult:
    started = datetime.now(UTC)
    t0 = time.monotonic()
    try:
        result = body()
    except Exception as exc:
        result = RunResult.infrastructure_error(
            request.mode, f"the runner failed: {type(exc).__name__}: {exc}", stderr=traceback.format_exc()[-4000:]
        )
    result.started_at = started
    result.finished_at = datetime.now(UTC)
    result.wall_time_s = time.monotonic() - t0
    with contextlib.suppress(Exception):  # (a result that cannot be bounded is returned as it is)
        result = bound_profile(result)  # what any result, a profile run's most of all, may carry
    result.request_sha256 = request.digest()
    result.nonce = request.nonce
    _tell(on_progress, Phase.DONE, result.verdict.label)
    return result


def _tell(on_progress: ProgressCallback | None, phase: Phase, detail: str) -> None:
    if on_progress is not None:
        with contextlib.suppress(Exception):
            on_progress(ProgressEvent(phase=phase, detail=detail))


def _run(
    request: RunRequest,
    settings: RunnerSettings,
    context: _Context,
    *,
    reference_only: bool = False,
    provenance_pass: bool = False,
) -> RunResult:
    """Plan the run (``runners.entry.plan``: pure), then carry the plan out (``_Execution``)."""
    _tell(context.on_progress, Phase.STARTING, request.problem)
    purpose = Purpose.REFERENCE if reference_only else Purpose.PROVENANCE if provenance_pass else Purpose.RUN
    machine = Machine(prestarter=context.prestart is not None, cannot_record=cannot_record_kernels(settings))
    return _Execution(request, settings, context, plan_run(request, settings, machine, purpose)).run()


class _Execution:
    """The executor: carries one run's plan out, in order: the GPUs, the system's facts, admission, the refusal,
    the sandboxes' shape, a pre-started set or a fresh folder, the job, the session, then the result from the
    evaluator's report. Whatever the plan could decide, it decided; here only what it says is done."""

    def __init__(self, request: RunRequest, settings: RunnerSettings, context: _Context, plan: RunPlan) -> None:
        self.request, self.settings, self.context, self.plan = request, settings, context, plan
        self.gpu, self.gpus = context.gpu, context.gpus
        self.system = SystemInfo()
        self.calibration_stamp: float | None = None
        """When the calibration this run reuses, or took and left for the next runs, was taken (the keeper's clock)."""
        self.follows_own_group = False
        """The run before this one on its GPU was of this run's (non-empty) baseline group (``Prestarter.follows``)."""
        self.headers: Headers | None = None
        self.launch: ProcessSet | None = None
        """A pre-started set taken for this run, until its session owns it (then None: the session stops it)."""

    def _error(self, message: str, **extra: Any) -> RunResult:
        return RunResult.infrastructure_error(self.request.mode, message, system=self.system, **extra)

    def run(self) -> RunResult:
        if self.plan.ranks:
            self.gpus, missing = rank_gpus(self.request, self.gpus)
            if missing:
                return RunResult.infrastructure_error(self.request.mode, missing)
            self.gpu = self.gpus[0] if self.gpus else None
        self.system = sysinfo.collect(self.request.device, self._gpu_index())
        self.system.world_size = self.request.world_size
        refused = self._admit() if self.plan.admit else None
        if refused is None and self.plan.refusal:
            self.system.ran = False
            refused = self._error(self.plan.refusal, fault="runner")
        return refused if refused is not None else self._start()

    def _gpu_index(self) -> int:
        return self.gpu.index if self.gpu is not None else 0

    def _admit(self) -> RunResult | None:
        """The file's admission and its language's headers: a result where the run stops here, else None."""
        try:
            check_submission(self.request)
            self.headers = language_headers(self.request, self.settings)
        except Rejected as rej:
            self.system.sandbox_note = "nothing was run: the file was refused before evaluation"
            self.system.ran = False
            return RunResult(verdict=rej.verdict, message=str(rej), mode=self.request.mode, system=self.system)
        except NotOffered as exc:  # the runner's lack, not the submission's: an infrastructure error (retried)
            self.system.sandbox_note = "nothing was run: this runner does not offer the language"
            self.system.ran = False
            return self._error(str(exc))
        self.system.headers = self.headers.version if self.headers else None
        return None

    def _start(self) -> RunResult:
        """The sandboxes' shape, a pre-started set of it (where the plan says warm) or a fresh job folder, the run
        in it; the folder is removed afterwards (unless kept for debugging) and a set never used is stopped."""
        allocator = allocator_library(self.settings.cache_path()) if self.plan.on_gpu else None
        include = self.headers.include_dirs if self.headers else ()
        extra_ro = (*((allocator.parent,) if allocator else ()), *include)
        sub_env = {HEADERS_ENV: os.pathsep.join(map(str, include))} if include else None
        python = self.settings.python or sys.executable
        shape = make_shape(self.request, gpu=self.gpu, python=python, prefix=[], extra_ro=extra_ro,
                           submission_env=sub_env, require_sandbox=self.context.require_sandbox)  # fmt: skip
        prestart = self.context.prestart
        self.launch = prestart.take(shape) if self.plan.warm and prestart is not None else None
        entry = prestart.calibration_entry(shape) if self.plan.reuse_calibration and prestart is not None else None
        reuse: _Reuse = (entry[0], entry[1]) if entry is not None else None
        self.calibration_stamp = entry[2] if entry is not None else None
        if prestart is not None and self.plan.on_gpu:  # every GPU run, so the next one knows whose ran before it
            others = tuple(g.uuid for g in self.gpus[1:]) if self.plan.ranks and self.gpus else ()
            self.follows_own_group = prestart.follows(shape, self.request.baseline_group, others)
        root = Path(self.launch.dirs.root) if self.launch is not None else new_job_root(self.settings.job_root)
        try:
            return self._in_folder(root, shape, allocator, reuse)
        finally:
            if self.launch is not None:  # taken, but the run failed before its session began: never used for another
                self.launch.stop()
            if not self.settings.keep_job_dirs:
                remove_tree(root)

    def _in_folder(self, root: Path, shape: Shape, allocator: Path | None, reuse: _Reuse) -> RunResult:
        request, plan = self.request, self.plan
        dirs = write_job(root, request)
        profiler = self._profiler(dirs.submission)
        timed = _Baselines(request, self.system, self.settings, plan.baselines)
        keeper = self.context.prestart
        if keeper is not None and plan.remember_baselines:
            timed.keep_in(keeper, shape, request.baseline_group, reuse=plan.reuse_baselines,
                          calibration=self.calibration_stamp, keep=self.follows_own_group)  # fmt: skip
        medians = _reference_medians(request, self.system, self.settings) if plan.reference_medians else ()
        bounds = bounds_for(request, plan.startup_s, medians)
        job = self._job(dirs, profiler, bounds, allocator, reuse, () if timed.reused else plan.job_baselines)
        session = self._session(job, dirs, shape, profiler, bounds)
        self.launch = None  # the session's now: it stops it whatever happens
        try:
            outcomes = session.run()
        except ReportError as exc:
            return self._error(f"the evaluator's report was invalid: {exc}")
        failed = self._failed(outcomes)
        if failed is not None:
            return failed
        self._after(outcomes, shape, reuse)
        result = self._result(outcomes, profiler, timed, dirs.submission, root)
        return _strip_paths(result, root)

    def _profiler(self, sub_dir: Path) -> ProfilerChoice:
        if self.plan.profiler == "provenance":
            return provenance_profiler(self.settings, sub_dir)
        if self.plan.profiler == "profile":
            return choose_profiler(self.settings, self.request, sub_dir)
        return ProfilerChoice()

    def _job(self, dirs: JobDirs, profiler: ProfilerChoice, bounds: Bounds, allocator: Path | None,
             reuse: _Reuse, baselines: tuple[tuple[str, str], ...]) -> Job:  # fmt: skip
        request, plan = self.request, self.plan
        return Job(
            mode=plan.job_mode,  # type: ignore[arg-type]  # (one of Job.mode's: runners.entry.plan)
            device=plan.job_device,
            lang=request.lang.value,
            submission=dirs.submission_file,
            display_name=Path(request.submission.name).name,
            tests=request.tests,
            benchmarks=request.benchmarks,
            timing=request.timing.model_dump(mode="json"),
            secret=secrets.token_hex(16) if plan.draw_secret else request.seed,
            profiler="ncu" if profiler.ncu else "torch",
            device_name=request.device_name,
            time_limit_s=bounds.total_s,  # (never before the entry's own deadlines: runners.entry.clock)
            max_batch_calls=plan.max_batch_calls,
            allocator=str(allocator) if allocator else None,
            heap_bytes=plan.heap_bytes,
            baselines_budget_s=plan.baselines_budget_s,
            baselines=list(baselines),
            world_size=request.world_size,
            calibration=reuse[0] if reuse else None,
            calibration_age_s=round(reuse[1], 3) if reuse else 0.0,
        )

    def _session(self, job: Job, dirs: JobDirs, shape: Shape, profiler: ProfilerChoice, bounds: Bounds) -> Session:
        """The session of the plan's kind, its sandboxes of ``shape`` with the plan's profiler in front and the
        submission process where the plan starts one; a warm run pre-starts the next set once its job is handed
        over."""
        plan, context, prestart = self.plan, self.context, self.context.prestart
        warm = plan.warm and prestart is not None
        spec = SessionSpec(
            request=self.request,
            job=job,
            dirs=dirs,
            shape=replace(shape, prefix=tuple(profiler.prefix), start_submission=plan.start_submission),
            bounds=bounds,
            on_progress=context.on_progress,
            cancel=context.cancel,
            prestarted=self.launch,
            after_handover=(lambda: prestart.prepare(shape, plan.helpers)) if warm and prestart is not None else None,
        )
        return RankSession(spec, gpus=self.gpus) if plan.ranks else Session(spec)

    def _failed(self, outcomes: Outcomes) -> RunResult | None:
        """The run's end where it is not the submission's result: the sandbox missing, a cancel, the platform's
        start-up running out (an overloaded runner), a reference check's hang (the problem's)."""
        if outcomes.unavailable:
            return self._error(outcomes.unavailable)
        if outcomes.cancelled:
            return self._error("the run was cancelled")
        if outcomes.expired == "overloaded":
            return self._error(outcomes.expired_message, phase_times=dict(outcomes.report.times), fault="runner")
        if outcomes.expired == "problem":
            return self._error(f"the problem {self.request.problem!r} failed: {outcomes.expired_message}",
                               phase_times=dict(outcomes.report.times), fault="problem")  # fmt: skip
        return None

    def _after(self, outcomes: Outcomes, shape: Shape, reuse: _Reuse) -> None:
        """What the run leaves this runner and the system's facts: the end clock, the calibration reused or kept."""
        if self.plan.on_gpu:
            self.system.sm_clock_end_mhz = sysinfo.sm_clock_mhz(self._gpu_index())
        if reuse is not None:
            self.system.calibration_age_s = round(reuse[1], 3)
        elif self.plan.remember_calibration and self.context.prestart and outcomes.report.calibration is not None:
            taken = outcomes.report.calibration_at
            self.context.prestart.remember_calibration(shape, outcomes.report.calibration, taken)
            self.calibration_stamp = self.context.prestart.calibration_stamp(shape)

    def _result(self, outcomes: Outcomes, profiler: ProfilerChoice, timed: _Baselines, sub_dir: Path,
                root: Path) -> RunResult:  # fmt: skip
        request, settings, context = self.request, self.settings, self.context
        if outcomes.report.profile is not None:
            outcomes.report.profile = submissions_own(outcomes.report.profile, ncu=profiler.ncu is not None)
        result = build_result(request, outcomes, self.system, profiler.note or None, settings.peaks_table())
        if outcomes.expired == "timeout":  # the submission's own limit (from its load), or one test's bound
            result = result.model_copy(update={"verdict": Verdict.TIMEOUT, "message": outcomes.expired_message,
                                               "fault": None, "score_ns": None})  # fmt: skip
        result = timed.finish(result, outcomes.report.baselines, outcomes.report.baselines_at, self.calibration_stamp)
        result = blame_the_floor(request, result, timed.medians.get(REFERENCE_BASELINE.label, []),
                                 peaks_for(self.system.gpu_name, settings.peaks_table()))  # fmt: skip
        if profiler.ncu:
            _add_ncu(result, profiler, sub_dir, root / "ncu-import", settings, context.require_sandbox,
                     profiled="profiling" in outcomes.report.times,
                     markers=self.plan.profiler == "provenance")  # fmt: skip
            result = bound_profile(result, settings.ncu_report_max_mb * 1024 * 1024)
        if self.plan.provenance and result.verdict.passed:
            result = _with_provenance(request, result, settings, context.require_sandbox, context.cancel, self.gpu,
                                      context.on_progress)  # fmt: skip
        return result


_Reuse = tuple[ClockCalibration, float] | None
"""A recent calibration of this GPU and its age (s), from the pre-started sets' keeper, or None."""


SUBMISSIONS_OWN = (
    "The table below is the submission's own: the torch profiler ran inside the submission's process, which can "
    "write anything here. It is not a measurement the platform vouches for."
)


def submissions_own(profile: RProfile, *, ncu: bool) -> RProfile | None:
    """What the result shows of the profile text the submission process sent (through the evaluator): under
    Nsight Compute nothing (the trusted side's metrics and report are the profile; the submission process has
    nothing to add, and whatever it says could pass for ncu's), else its torch profiler table under a line that
    says plainly whose it is."""
    if ncu or not profile.text.strip():
        return None
    return profile.model_copy(update={"text": f"{SUBMISSIONS_OWN}\n\n{profile.text}"})


def _reference_medians(request: RunRequest, system: SystemInfo, settings: RunnerSettings) -> tuple[float | None, ...]:
    """The reference's median per benchmark case on this runner (ns), where its cache has them from an earlier run:
    what the benchmark cases' bounds (and a test's, where its own reference time is not measured) derive from until
    this run times the reference itself (a run that does updates them as it goes: ``RunClock.saw_reference``). Empty
    where it has none."""
    try:
        key = baselines.cache_key(request, system, REFERENCE_BASELINE, settings.max_batch_calls, settings.python or "")
        hit = baselines.BaselineCache(settings.baseline_cache_path(), settings.baseline_cache_max_age_s).get(key)
    except Exception:  # a cache that cannot be read only means no bounds of their own for the steps
        return ()
    if hit is None or len(hit[0]) != len(request.benchmarks):
        return ()
    return tuple(hit[0])


class _Baselines:
    """The baselines a timed run reports (the plan's: all of the request's), each timed in this run by the evaluator
    (before the submission loads, on this machine as it is now), and, at the end, their speedups. A speedup never
    rests on a baseline timed under other conditions: on a loaded machine a reference cached 34 minutes earlier made
    the reference's own operation read "0.01x" (issue 31). The one exception is a long-lived runner's benchmark-mode
    run on a GPU (a program's candidates, back to back): it takes the baselines an earlier run of the same account
    (``RunRequest.baseline_group``) timed on the same GPU within ``RunnerSettings.baseline_reuse_s`` (60 s), under
    the calibration it reuses, and says so (``cached``, ``measured_at``); a ranked run always times its own. What
    was timed goes into this runner's cache all the same: the reference's medians there bound the steps of later
    runs that do not time it (``_reference_medians``)."""

    def __init__(
        self, request: RunRequest, system: SystemInfo, settings: RunnerSettings, to_time: tuple[BaselineSpec, ...]
    ) -> None:
        self.request = request
        self.cache = baselines.BaselineCache(settings.baseline_cache_path(), settings.baseline_cache_max_age_s)
        self.medians: dict[str, list[float | None]] = {}
        """Each baseline's median per case, timed in this run (``finish``), whatever the submission did."""
        self.to_time = to_time
        self.keys = {
            spec.label: baselines.cache_key(request, system, spec, settings.max_batch_calls, settings.python or "")
            for spec in self.to_time
        }
        self.keeper: tuple[Prestarter, Shape, str] | None = None
        self.reused: dict[str, TimedBaseline] = {}
        """Every baseline's reports taken from the keeper (all of them or none): the evaluator times none."""

    def keep_in(self, keeper: Prestarter, shape: Shape, group: str, *, reuse: bool, calibration: float | None,
                keep: bool) -> None:  # fmt: skip
        """With ``keep`` (the run before on this GPU was of ``group``: ``Prestarter.follows``), remember what this run
        times in ``keeper`` for the next runs of ``group`` on ``shape``'s GPU; with ``reuse``, take every baseline
        from it instead, where it holds all of them fresh (``RunnerSettings.baseline_reuse_s``) and corrected with
        the calibration this run reuses (taken at ``calibration``; None: this run takes its own, and times its own
        baselines under it)."""
        self.keeper = (keeper, shape, group) if keep else None
        if not reuse or not self.to_time:
            return
        found = {spec.label: keeper.baselines(shape, group, self.keys[spec.label], calibration)
                 for spec in self.to_time}  # fmt: skip
        if all(found.values()):
            self.reused = {label: kept for label, kept in found.items() if kept is not None}

    def finish(self, result: RunResult, reports: dict[str, list[RBaseline]], timed_at: float | None = None,
               calibration: float | None = None) -> RunResult:  # fmt: skip
        """The result with its baselines' speedups. ``timed_at``: when (``time.monotonic``) the evaluator's last
        baseline report arrived; ``calibration``: when the calibration it corrected them with was taken (both to
        keep them for later runs)."""
        if not self.to_time:
            return result
        now = baselines.now()
        ago = max(time.monotonic() - timed_at, 0.0) if timed_at is not None else 0.0
        at = (datetime.now(UTC) - timedelta(seconds=ago)).replace(microsecond=0) if timed_at is not None else now
        out = []
        for spec in self.to_time:
            kept = self.reused.get(spec.label)
            own = kept.reports if kept is not None else reports.get(spec.label, [])
            got, note = baselines.measured(spec, own, len(self.request.benchmarks))
            self.medians[spec.label] = baselines.medians(got)
            if not note and kept is None:
                with contextlib.suppress(OSError):
                    self.cache.put(self.keys[spec.label], [m for m in baselines.medians(got) if m is not None], at)
                if self.keeper is not None and timed_at is not None and calibration is not None:
                    keeper, shape, group = self.keeper
                    keeper.remember_baselines(shape, group, self.keys[spec.label],
                                              TimedBaseline(list(own), at, timed_at, calibration))  # fmt: skip
            made = baselines.result(spec, got, result.benchmarks, measured_at=kept.measured_at if kept else at,
                                    note=note)  # fmt: skip
            out.append(made.model_copy(update={"cached": True}) if kept is not None else made)
        # A failed run reports no speedup (its baselines' times are cached all the same).
        return result.model_copy(update={"baselines": out}) if result.verdict.passed else result


_wants = wants_provenance  # (the provenance tests' name for the rule: runners.entry.plan holds it)


def _with_provenance(
    request: RunRequest,
    result: RunResult,
    settings: RunnerSettings,
    require_sandbox: bool,
    cancel: threading.Event | None,
    gpu: Gpu | None,
    on_progress: ProgressCallback | None,
) -> RunResult:
    """The provenance pass (``runners.provenance``, docs/anti-cheat.md): after timing, untimed, a separate run of
    the submission under Nsight Compute records the kernels one call of each benchmark case launches; each case's
    record goes into its ``kernels``, and a run the problem's library policy refuses is rejected here."""
    t0 = time.monotonic()
    if on_progress is not None:
        with contextlib.suppress(Exception):
            on_progress(ProgressEvent(phase=Phase.PROFILING, detail="which kernels ran (provenance)"))
    policy = request.library_policy
    why = cannot_record_kernels(settings)
    launches: list[Launch] | None = None
    parts: list[list[Launch]] | None = None
    note = why
    if not why or policy is None:  # without ncu, the torch profiler's names (never enough for a policy)
        limits = request.limits.model_copy(update={"run_timeout_s": request.provenance_run_s()})
        sub = request.model_copy(update={"mode": Mode.PROFILE, "tests": [], "baselines": [], "limits": limits})
        try:
            context = _Context(require_sandbox=require_sandbox, cancel=cancel, gpu=gpu)
            got = _run(sub, settings, context, provenance_pass=True)
        except Exception as exc:
            got = RunResult.infrastructure_error(Mode.PROFILE, f"{type(exc).__name__}: {exc}")
        if got.verdict.passed and not why and got.kernel_metrics:
            launches = [Launch(m.name, m.duration_ns, m.grid, m.block) for m in got.kernel_metrics]
        elif got.verdict.passed and why:
            parts = parse_torch_tables(got.profile or "", len(request.benchmarks))
            note = (f"{why}: the kernels are the torch profiler's in the submission's own process, its word for "
                    "them" if parts is not None else f"{why}, and the torch profiler's tables could not be read")
        else:
            said = (got.profile or "").strip().splitlines()
            note = f"the provenance pass failed: {got.verdict.label}: {got.message or ' '.join(said[-2:])}"[:600]
    medians = [b.stats.median_ns if b.stats else None for b in result.benchmarks]
    cases, violations, lacks = record(launches, medians, policy, note=note, parts=parts)
    seconds = round(time.monotonic() - t0, 3)
    collector = "ncu" if launches is not None else "torch" if parts is not None else "none"
    prov = Provenance(collector=collector, policy=policy.describe() if policy else "", note=lacks[:2000],
                      seconds=seconds)  # fmt: skip
    benches = [b.model_copy(update={"kernels": c}) for b, c in zip(result.benchmarks, cases, strict=False)]
    benches = [b.model_copy(update={"digest": digest(b)}) for b in benches]
    update: dict[str, object] = {"benchmarks": benches, "provenance": prov,
                                 "phase_times": {**result.phase_times, "provenance": seconds}}  # fmt: skip
    if violations:
        more = f" (and {len(violations) - 1} more case(s) alike)" if len(violations) > 1 else ""
        message = violations[0] + more
        update.update(verdict=Verdict.REJECTED, message=message[:2000], rejection=REJECTION, score_ns=None,
                      baselines=[])  # fmt: skip
    return result.model_copy(update=update)


def _add_ncu(
    result: RunResult,
    profiler: ProfilerChoice,
    sub_dir: Path,
    work: Path,
    settings: RunnerSettings,
    require_sandbox: bool,
    *,
    profiled: bool,
    markers: bool = False,
) -> None:
    """Nsight Compute's metrics and report into the result, read by this trusted process after the run. The
    provenance pass's markers (``runners.provenance.MARKER``) stay where ``markers``, else they are left out."""
    assert profiler.ncu is not None
    try:
        got = collect(profiler.ncu, sub_dir, work, max_report_bytes=settings.ncu_report_max_mb * 1024 * 1024,
                      require_sandbox=require_sandbox, profiled=profiled, demangled=markers)  # fmt: skip
    except Exception as exc:  # the run itself stands: only its profile is missing, and the note says why
        got = NcuOutcome(notes=[f"Reading Nsight Compute's report failed: {type(exc).__name__}: {exc}"])
    result.kernel_metrics = got.metrics if markers else [m for m in got.metrics if not MARKER.search(m.name)]
    result.ncu_report = got.report
    lines = list(got.notes)
    if result.kernel_metrics:
        attached = " (report attached)" if got.report is not None else ""
        lines.insert(0, f"Nsight Compute profiled {len(result.kernel_metrics)} kernel launch(es){attached}.")
    if lines:
        result.profile = "\n".join(lines) + (f"\n\n{result.profile}" if result.profile else "")


def _strip_paths(result: RunResult, root: Path) -> RunResult:
    """Paths inside the job folders read as plain file names in messages (the folders are gone afterwards)."""
    prefixes = [f"{root}/sub/", f"{root}/oracle/problem/", f"{root}/oracle/", f"{root}/"]

    def strip(text: str) -> str:
        for p in prefixes:
            text = text.replace(p, "")
        return text

    result.message = strip(result.message)
    result.compile_output = strip(result.compile_output)
    if result.profile:
        result.profile = strip(result.profile)
    items: list[TestResult | BenchmarkResult] = [*result.tests, *result.benchmarks]
    for item in items:
        item.message = strip(item.message)
    for baseline in result.baselines:
        baseline.note = strip(baseline.note)
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m runners.entry REQUEST.json RESULT.json`` (``-`` for stdin/stdout)."""
    args = list(sys.argv[1:] if argv is None else argv)
    require = "--require-sandbox" in args
    args = [a for a in args if a != "--require-sandbox"]
    if len(args) != 2:
        print(
            "usage: python -m runners.entry [--require-sandbox] REQUEST.json RESULT.json  ('-' for stdin/stdout)",
            file=sys.stderr,
        )
        return 2
    src, dst = args
    raw = sys.stdin.read() if src == "-" else Path(src).read_text(encoding="utf-8")
    try:
        request = RunRequest.model_validate_json(raw)
    except Exception as exc:
        mode = Mode.TEST
        with contextlib.suppress(Exception):
            mode = Mode(json.loads(raw).get("mode", "test"))
        result = RunResult.infrastructure_error(mode, f"the run request is not valid: {exc}")
    else:

        def progress(event: ProgressEvent) -> None:
            print(json.dumps({"progress": event.model_dump(mode="json")}), file=sys.stderr, flush=True)

        # This program is the runner machine's own composition root (only runners/ travels there): its settings are
        # the environment and the runner's .env, read here and passed down.
        settings = RunnerSettings(_env_file=".env", _env_file_encoding="utf-8")  # type: ignore[call-arg]
        result = run_request(request, progress, settings=settings, require_sandbox=require)
    text = result.model_dump_json()
    if dst == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    else:
        tmp = Path(dst).with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(dst)
    return 0
