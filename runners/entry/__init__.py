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
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

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
    NotOffered,
    Rejected,
    allocator_library,
    check_submission,
    language_headers,
    new_job_root,
    write_job,
)
from runners.entry.clock import OVERLOADED, bounds_for
from runners.entry.prestart import Prestarter
from runners.entry.profiling import (
    NcuOutcome,
    ProfilerChoice,
    cannot_record_kernels,
    choose_profiler,
    collect,
    provenance_profiler,
)
from runners.entry.ranks import RankSession, rank_gpus
from runners.entry.session import REPO_ROOT, ProgressCallback, ReportError, Session, make_shape
from runners.entry.verdict import blame_the_floor, build_result
from runners.gpus import Gpu
from runners.ipc.protocol import Job, RBaseline, RProfile
from runners.oracle.base import derive_seed
from runners.provenance import CANNOT_CHECK, MARKER, REJECTION, Launch, Provenance, parse_torch_tables, record
from runners.provenance_digest import digest
from runners.sandbox.remove import remove_tree
from runners.settings import RunnerSettings
from runners.submission.languages import HEADERS_ENV
from runners.validation import bound_profile

__all__ = ["OVERLOADED", "REPO_ROOT", "check_reference", "derive_seed", "main", "run_request"]


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
    return _timed(request, on_progress, lambda: _run(request, on_progress, settings or RunnerSettings(),
                                                      require_sandbox, cancel, gpu=gpu, gpus=gpus,
                                                      prestart=prestart))  # fmt: skip


def check_reference(request: RunRequest, *, settings: RunnerSettings | None = None) -> RunResult:
    """Run the problem's own reference on ``request.tests[0]`` in the sandboxed evaluator: generate_input ->
    ref_kernel -> check_implementation. ACCEPTED when the reference passes its own check; otherwise an
    infrastructure error (or wrong answer) whose message says what the problem did wrong. No submission runs."""
    return _timed(request, None, lambda: _run(request, None, settings or RunnerSettings(), False, None,
                                               reference_only=True))  # fmt: skip


def _timed(request: RunRequest, on_progress: ProgressCallback | None, body: object) -> RunResult:
    started = datetime.now(UTC)
    t0 = time.monotonic()
    try:
        result = body()  # type: ignore[operator]
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
    if on_progress is not None:
        with contextlib.suppress(Exception):
            on_progress(ProgressEvent(phase=Phase.DONE, detail=result.verdict.label))
    return result


def _run(
    request: RunRequest,
    on_progress: ProgressCallback | None,
    settings: RunnerSettings,
    require_sandbox: bool,
    cancel: threading.Event | None,
    *,
    reference_only: bool = False,
    gpu: Gpu | None = None,
    gpus: list[Gpu] | None = None,
    prestart: Prestarter | None = None,
    provenance_pass: bool = False,
) -> RunResult:
    if on_progress is not None:
        with contextlib.suppress(Exception):
            on_progress(ProgressEvent(phase=Phase.STARTING, detail=request.problem))
    ranks = request.world_size > 1 and not reference_only
    if ranks:
        gpus, missing = rank_gpus(request, gpus)
        if missing:
            return RunResult.infrastructure_error(request.mode, missing)
        gpu = gpus[0] if gpus else None
    gpu_index = gpu.index if gpu is not None else 0
    system = sysinfo.collect(request.device, gpu_index)
    system.world_size = request.world_size
    headers = None
    if not reference_only:
        try:
            check_submission(request)
            headers = language_headers(request, settings)
        except Rejected as rej:
            system.sandbox_note = "nothing was run: the file was refused before evaluation"
            system.ran = False
            return RunResult(verdict=rej.verdict, message=str(rej), mode=request.mode, system=system)
        except NotOffered as exc:  # the runner's lack, not the submission's: an infrastructure error (retried)
            system.sandbox_note = "nothing was run: this runner does not offer the language"
            system.ran = False
            return RunResult.infrastructure_error(request.mode, str(exc), system=system)
        system.headers = headers.version if headers else None
    on_gpu = request.device != "cpu"
    if _records_kernels(request, reference_only, ranks) and request.library_policy is not None:
        why = cannot_record_kernels(settings)
        if why:  # the runner's lack: another runner may have ncu (an infrastructure error is retried elsewhere)
            system.ran = False
            message = f"{CANNOT_CHECK} ({why}), which problem {request.problem!r} has"
            return RunResult.infrastructure_error(request.mode, message, system=system, fault="runner")
    allocator = allocator_library(settings.cache_path()) if on_gpu else None
    extra_ro = (*((allocator.parent,) if allocator else ()), *(headers.include_dirs if headers else ()))
    submission_env = (
        {HEADERS_ENV: os.pathsep.join(map(str, headers.include_dirs))} if headers and headers.include_dirs else None
    )
    python = settings.python or sys.executable
    # Pre-started sets serve the ordinary runs of one rank; a profile run (Nsight Compute in front of the submission
    # process) and the reference check always start cold.
    warm = prestart is not None and settings.prestart and not reference_only and request.mode is not Mode.PROFILE
    warm = warm and not ranks
    shape = make_shape(request, gpu=gpu, python=python, prefix=[], extra_ro=extra_ro, submission_env=submission_env,
                       require_sandbox=require_sandbox)  # fmt: skip
    launch = prestart.take(shape) if warm and prestart is not None else None
    timed = request.mode in (Mode.BENCHMARK, Mode.RANKED) and not reference_only and not ranks
    reuse = prestart.calibration(shape) if prestart is not None and on_gpu and timed else None
    root = Path(launch.dirs.root) if launch is not None else new_job_root(settings.job_root)
    try:
        dirs = write_job(root, request)
        profiler = (
            provenance_profiler(settings, dirs.submission)
            if provenance_pass
            else choose_profiler(settings, request, dirs.submission)
            if not ranks
            else ProfilerChoice()
        )
        # Several ranks: no baselines (the reference runs on one device; docs/multigpu.md).
        plan = _BaselinePlan(request, system, settings, active=not reference_only and request.world_size == 1)
        bounds = bounds_for(request, settings.startup_timeout_s,
                            () if reference_only else _reference_medians(request, system, settings))  # fmt: skip
        job = Job(
            mode="reference" if reference_only else request.mode.value,
            device="cpu" if request.device == "cpu" else "cuda",
            lang=request.lang.value,
            submission=dirs.submission_file,
            display_name=Path(request.submission.name).name,
            tests=request.tests,
            benchmarks=request.benchmarks,
            timing=request.timing.model_dump(mode="json"),
            secret=request.seed if request.seed is not None or not ranks else secrets.token_hex(16),
            profiler="ncu" if profiler.ncu else "torch",
            device_name=request.device_name,
            time_limit_s=bounds.total_s,  # (never before the entry's own deadlines: runners.entry.clock)
            max_batch_calls=settings.max_batch_calls,
            allocator=str(allocator) if allocator else None,
            heap_bytes=settings.gpu_heap_mb * 1024 * 1024 if settings.gpu_heap_mb else None,
            baselines_budget_s=baselines.BUDGET_S,
            baselines=[(spec.label, spec.function) for spec in plan.to_time]
            if not reference_only
            else [(spec.label, spec.function) for spec in request.baselines if spec != REFERENCE_BASELINE]
            if request.world_size == 1
            else [],
            world_size=request.world_size,
            calibration=reuse[0] if reuse else None,
            calibration_age_s=round(reuse[1], 3) if reuse else 0.0,
        )
        # The next run's set: the helpers this run starts (the calibration echo of a timed run; the baseline process,
        # and on the CPU its own echo, where this run times baselines).
        helpers: tuple[str, ...] = ("echo",) if request.mode in (Mode.BENCHMARK, Mode.RANKED) else ()
        if plan.to_time:
            helpers += ("baseline", "echo-baselines") if request.device == "cpu" else ("baseline",)
        session = (partial(RankSession, gpus=gpus) if ranks else Session)(
            request,
            job,
            dirs,
            python=python,
            submission_argv_prefix=profiler.prefix,
            extra_ro=extra_ro,
            require_sandbox=require_sandbox,
            submission_env=submission_env,
            on_progress=on_progress,
            cancel=cancel,
            start_submission=not reference_only,
            gpu=gpu,
            prestarted=launch,
            after_handover=(lambda: prestart.prepare(shape, helpers)) if warm and prestart is not None else None,
            bounds=bounds,
        )
        launch = None  # the session's now: it stops it whatever happens
        try:
            outcomes = session.run()
        except ReportError as exc:
            return RunResult.infrastructure_error(request.mode, f"the evaluator's report was invalid: {exc}",
                                                  system=system)  # fmt: skip
        if outcomes.unavailable:
            return RunResult.infrastructure_error(request.mode, outcomes.unavailable, system=system)
        if outcomes.cancelled:
            return RunResult.infrastructure_error(request.mode, "the run was cancelled", system=system)
        if outcomes.expired in ("overloaded", "problem"):  # the platform's start-up; a reference check's hang
            return RunResult.infrastructure_error(
                request.mode,
                outcomes.expired_message
                if outcomes.expired == "overloaded"
                else f"the problem {request.problem!r} failed: {outcomes.expired_message}",
                system=system,
                phase_times=dict(outcomes.report.times),
                fault="runner" if outcomes.expired == "overloaded" else "problem",
            )
        if on_gpu:
            system.sm_clock_end_mhz = sysinfo.sm_clock_mhz(gpu_index)
        if reuse is not None:
            system.calibration_age_s = round(reuse[1], 3)
        elif prestart is not None and timed and outcomes.report.calibration is not None:
            prestart.remember_calibration(shape, outcomes.report.calibration)
        if outcomes.report.profile is not None:
            outcomes.report.profile = submissions_own(outcomes.report.profile, ncu=profiler.ncu is not None)
        result = build_result(request, outcomes, system, profiler.note or None, settings.peaks_table())
        if outcomes.expired == "timeout":  # the submission's own limit (from its load), or one test's bound
            result = result.model_copy(update={"verdict": Verdict.TIMEOUT, "message": outcomes.expired_message,
                                               "fault": None, "score_ns": None})  # fmt: skip
        result = plan.finish(result, outcomes.report.baselines)
        result = blame_the_floor(request, result, plan.medians.get(REFERENCE_BASELINE.label, []),
                                 peaks_for(system.gpu_name, settings.peaks_table()))  # fmt: skip
        if profiler.ncu:
            _add_ncu(result, profiler, dirs.submission, root / "ncu-import", settings, require_sandbox,
                     profiled="profiling" in outcomes.report.times, markers=provenance_pass)  # fmt: skip
            result = bound_profile(result, settings.ncu_report_max_mb * 1024 * 1024)
        if _records_kernels(request, reference_only, ranks) and result.verdict.passed and _wants(request, settings):
            result = _with_provenance(request, result, settings, require_sandbox, cancel, gpu, on_progress)
        return _strip_paths(result, root)
    finally:
        if launch is not None:  # taken, but the run failed before its session began: never used for another job
            launch.stop()
        if not settings.keep_job_dirs:
            remove_tree(root)


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


class _BaselinePlan:
    """Which baselines a timed run reports (all of the request's), each timed in this run by the evaluator (before
    the submission loads, on this machine as it is now), and, at the end, their speedups. A speedup never rests on
    a baseline timed in another run: on a loaded machine a reference cached 34 minutes earlier made the reference's
    own operation read "0.01x" (issue 31). What was timed goes into this runner's cache all the same: the
    reference's medians there bound the steps of later runs that do not time it (``_reference_medians``)."""

    def __init__(self, request: RunRequest, system: SystemInfo, settings: RunnerSettings, *, active: bool) -> None:
        self.request = request
        self.cache = baselines.BaselineCache(settings.baseline_cache_path(), settings.baseline_cache_max_age_s)
        self.medians: dict[str, list[float | None]] = {}
        """Each baseline's median per case, timed in this run (``finish``), whatever the submission did."""
        timed = request.mode in (Mode.BENCHMARK, Mode.RANKED) and bool(request.benchmarks) and settings.time_baselines
        self.to_time: list[BaselineSpec] = list(request.baselines) if active and timed else []
        self.keys = {
            spec.label: baselines.cache_key(request, system, spec, settings.max_batch_calls, settings.python or "")
            for spec in self.to_time
        }

    def finish(self, result: RunResult, reports: dict[str, list[RBaseline]]) -> RunResult:
        if not self.to_time:
            return result
        started = baselines.now()
        out = []
        for spec in self.to_time:
            got, note = baselines.measured(spec, reports.get(spec.label, []), len(self.request.benchmarks))
            self.medians[spec.label] = baselines.medians(got)
            if not note:
                with contextlib.suppress(OSError):
                    self.cache.put(self.keys[spec.label], [m for m in baselines.medians(got) if m is not None], started)
            out.append(baselines.result(spec, got, result.benchmarks, measured_at=started, note=note))
        # A failed run reports no speedup (its baselines' times are cached all the same).
        return result.model_copy(update={"baselines": out}) if result.verdict.passed else result


def _records_kernels(request: RunRequest, reference_only: bool, ranks: bool) -> bool:
    """Whether a run gets a provenance pass: a timed run of one rank on a GPU (issue 30)."""
    timed = request.mode in (Mode.BENCHMARK, Mode.RANKED) and bool(request.benchmarks)
    return timed and request.device != "cpu" and not reference_only and not ranks


def _wants(request: RunRequest, settings: RunnerSettings) -> bool:
    """Whether this runner gives a timed run the provenance pass (``RunnerSettings.provenance``): a problem with a
    library policy always gets it (unless it is off, when such a run is refused before it starts)."""
    if request.library_policy is not None:
        return settings.provenance != "off"
    return settings.provenance == "always" or (settings.provenance == "ranked" and request.mode is Mode.RANKED)


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
            got = _run(sub, None, settings, require_sandbox, cancel, gpu=gpu, provenance_pass=True)
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
