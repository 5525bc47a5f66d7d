"""One run's processes: the evaluator and the submission process, each in a sandbox of its own, and the report.

A :class:`Launch` makes the pipes and the socket and starts both sandboxes at once (their interpreters start in
parallel): for the job at hand (cold), or ahead of it (pre-started, ``runners.entry.prestart``). The session hands the
job to the evaluator, and reads the evaluator's report until it ends, enforcing its order and its caps. Whatever
happens, both process trees are gone when :meth:`Session.run` returns.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runners import stats, sysinfo
from runners.contract import REFERENCE_BASELINE, Mode, Phase, ProgressEvent, RunRequest
from runners.entry.admission import shared_files
from runners.entry.clock import (
    HEARTBEAT_S,
    Bounds,
    RunClock,
    Step,
    bounds_for,
    hung_call,
    overloaded_message,
    reference_hang_message,
    user_timeout_message,
)
from runners.gpus import Gpu
from runners.ipc.protocol import (
    REPORT,
    SUBMISSION_EXITED,
    Job,
    RBaseline,
    RBench,
    RCalibration,
    RCompiled,
    RDone,
    RFatal,
    RHello,
    RProfile,
    RProgress,
    RTest,
    RTestReference,
)
from runners.ipc.wire import socket_pair
from runners.ipc.wiring import SOCKET_FD_ENV, WARM_ENV, WARM_TOOLCHAIN_ONLY
from runners.oracle.base import HELPER_THREADS_ENV, JOB_FD_ENV, PRESTART_ENV, REPORT_FD_ENV
from runners.sandbox import (
    Handover,
    ProcessOutcome,
    SandboxSpec,
    SandboxUnavailable,
    python_ro_paths,
    run_sandboxed,
)
from runners.validation import error_message

REPO_ROOT = Path(__file__).resolve().parents[2]
MAX_REPORT_LINE = 4 * 1024 * 1024
MAX_REPORT_BYTES = 64 * 1024 * 1024
MAX_REPORTS = 20_000
DEFAULT_STARTUP_S = 90.0
"""The platform's start-up limit where no settings say otherwise (``RunnerSettings.startup_timeout_s``)."""
SUBMISSION_MAX_OUTPUT_BYTES = 8 * 1024 * 1024
"""Output the submission process may print in all before it is stopped (only ``output_cap_bytes`` of each stream is
kept): reading more only costs time, and on a loaded machine 64 MiB took longer than a test's own timeout."""
log = logging.getLogger("runners.entry")
ProgressCallback = Callable[[ProgressEvent], None]


class ReportError(Exception):
    """The evaluator's report broke its own protocol (a bug of ours: an infrastructure error)."""


@dataclass
class Report:
    """What the evaluator reported, in order, checked as it arrived."""

    hello: RHello | None = None
    compiled: RCompiled | None = None
    tests: list[RTest] = field(default_factory=list)
    benches: list[RBench] = field(default_factory=list)
    baselines: dict[str, list[RBaseline]] = field(default_factory=dict)
    """Per baseline label, its cases in order (the last may carry the error that stopped it)."""
    profile: RProfile | None = None
    fatal: RFatal | None = None
    calibration: RCalibration | None = None
    """The GPU calibration the evaluator took before the submission loaded (a runner may reuse it on this GPU)."""
    calibration_at: float | None = None
    """When (``time.monotonic``) the calibration's report arrived: when it was taken."""
    baselines_at: float | None = None
    """When (``time.monotonic``) the last baseline report arrived: when the baselines were timed."""
    done: bool = False
    phase: str = "starting"
    times: dict[str, float] = field(default_factory=dict)
    """Seconds from the session's start to the first report of each kind or phase."""


@dataclass
class Outcomes:
    report: Report
    oracle: ProcessOutcome | None
    submission: ProcessOutcome | None
    cancelled: bool = False
    unavailable: str = ""
    expired: str = ""
    """A deadline of the entry's own ran out (``runners.entry.clock``): 'overloaded' (the platform's start-up),
    'timeout' (the submission's limit or a test's bound) or 'problem' (a reference check's case); '' otherwise."""
    expired_message: str = ""


def _import_roots() -> list[Path]:
    """The folders the sandboxed processes import from, in this process's order: this repository first, then every
    folder on ``sys.path`` that holds code to import (``_importable``)."""
    roots = [REPO_ROOT, *(Path(p).resolve() for p in sys.path if p and Path(p).is_dir())]
    return [root for root in dict.fromkeys(roots) if root == REPO_ROOT or _importable(root)]


def _importable(folder: Path) -> bool:
    """A ``sys.path`` folder the sandboxes may see: the interpreter's own (under its prefixes), a site folder (pip's
    metadata in it: a ``pip install --target`` on ``PYTHONPATH``), or a checkout holding the ``runners`` package.
    Not any other folder: ``python -m kernelcup`` puts its working directory on ``sys.path``, and whatever lies there
    (a settings file with a token, red team 2026-11-24) was readable by every submission."""
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    if any(folder == q or q in folder.parents for q in prefixes):
        return True
    if (folder / "runners" / "__init__.py").is_file():
        return True
    return any(folder.glob("*.dist-info")) or any(folder.glob("*.egg-info"))


def _ro_python() -> list[Path]:
    """What the sandboxes see of the Python side: the interpreter and its packages, and of a folder that holds the
    ``runners`` package (this repository, a checkout on ``sys.path``) only that package: never its other files
    (problem sets, data folders, settings files, the other layers' code)."""
    view = []
    for root in _import_roots():
        view.append(root / "runners" if (root / "runners" / "__init__.py").is_file() else root)
    return [*python_ro_paths(), *view]


def _env(extra: dict[str, str], device: str, gpu: Gpu | None = None) -> dict[str, str]:
    env = {
        "PYTHONPATH": os.pathsep.join(str(root) for root in _import_roots()),
        "PYTHONUNBUFFERED": "1",
        **extra,
    }
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["TRITON_INTERPRET"] = "1"
    elif gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu.uuid  # by UUID: whatever order CUDA lists devices in
    return env


def _holder_of(fd: int, module: str) -> int | None:
    """The process (host pid) that holds the other end of the pipe ``fd`` and runs ``python -m module``: the
    sandboxed evaluator (bubblewrap and the sandbox's init hold the end too, but run other commands). None if none
    is found."""
    try:
        link = f"pipe:[{os.fstat(fd).st_ino}]"
    except OSError:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if (proc / "cmdline").read_bytes().split(b"\0")[1:3] != [b"-m", module.encode()]:
                continue
            if any(os.readlink(f) == link for f in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:
            continue
    return None


def close_ends(ends: list[Any], fds: list[int]) -> None:
    """Close this parent's copies of the ends a started child holds (so each side sees the other's exit as end of
    file): a descriptor only while ``fds`` (what the parent still holds open) lists it, taken out of it; a socket
    always."""
    for end in ends:
        with contextlib.suppress(OSError, ValueError):
            if isinstance(end, int):
                if end in fds:
                    fds.remove(end)
                    os.close(end)
            else:
                end.close()


@dataclass(frozen=True)
class Shape:
    """What a run's two sandboxes are started with, all of it known before the job: a job whose shape equals a
    pre-started set's may be handed to that set (``runners.entry.prestart``); any other starts cold."""

    device: str
    gpu: Gpu | None
    python: str
    prefix: tuple[str, ...]
    extra_ro: tuple[Path, ...]
    submission_env: tuple[tuple[str, str], ...]
    shared_ro: tuple[str, ...]
    """Files of the submission's folder it may read but not change, relative to that folder."""
    host_memory_mb: int
    output_cap_bytes: int
    require_sandbox: bool
    start_submission: bool = True


def make_shape(
    request: RunRequest,
    *,
    gpu: Gpu | None,
    python: str,
    prefix: list[str],
    extra_ro: tuple[Path, ...],
    submission_env: dict[str, str] | None,
    require_sandbox: bool,
    start_submission: bool = True,
) -> Shape:
    return Shape(
        device=request.device,
        gpu=gpu,
        python=python,
        prefix=tuple(prefix),
        extra_ro=tuple(extra_ro),
        submission_env=tuple(sorted((submission_env or {}).items())),
        shared_ro=shared_files(request),
        host_memory_mb=request.limits.host_memory_mb,
        output_cap_bytes=request.limits.output_cap_bytes,
        require_sandbox=require_sandbox,
        start_submission=start_submission,
    )


class Launch:
    """One run's two sandboxed processes, from their start to their end. Cold (``timeout_s``), they start for the
    job at hand; pre-started (``idle_s``), they start before any job exists, with nothing but PyTorch imported (and
    the evaluator's ``helpers``), and wait for it on their pipe and socket, at most ``idle_s``. :meth:`hand_over`
    gives them the job; their time limit counts from then. Used once: :meth:`stop` kills both trees."""

    def __init__(self, shape: Shape, dirs: Any, *, timeout_s: float = 0.0, idle_s: float | None = None,
                 helpers: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.shape = shape
        self.dirs = dirs
        self.handover = Handover(idle_s) if idle_s is not None else None
        self.report_r, report_w = os.pipe()
        job_r, self.job_w = os.pipe()
        sock_oracle, sock_sub = socket_pair()
        self._socks = (sock_oracle, sock_sub)
        self.fds_to_close = [self.report_r, report_w, job_r, self.job_w]
        self.oracle_cancel, self.sub_cancel = threading.Event(), threading.Event()
        self.outcomes: dict[str, ProcessOutcome | None] = {"oracle": None, "submission": None}
        self.errors: dict[str, str] = {}
        self.threads: list[threading.Thread] = []
        self.started_at = 0.0
        self.handed_over = False
        self._lock = threading.Lock()
        ro = tuple(dict.fromkeys([*_ro_python(), *shape.extra_ro]))
        gpu = shape.device != "cpu"
        oracle_env = {REPORT_FD_ENV: str(report_w), JOB_FD_ENV: str(job_r)}
        if self.handover is not None:
            oracle_env[PRESTART_ENV] = ",".join(helpers)
        # A hang of the problem's code is named from the evaluator's stack (SIGABRT: faulthandler prints it).
        oracle_env["PYTHONFAULTHANDLER"] = "1"
        if not gpu:
            # The evaluator's checks must not leave OpenMP threads spinning on the cores the submission is timed on.
            # Its helpers (the baseline process, the echo) run with the submission's threads: a reference timed on one
            # thread beside a submission timed on every core read 0.05x for the reference's own operation on a loaded
            # machine (issue 31).
            oracle_env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
            oracle_env[HELPER_THREADS_ENV] = os.environ.get("OMP_NUM_THREADS", "")
        oracle_fds = [report_w, job_r]
        if shape.start_submission:
            oracle_env[SOCKET_FD_ENV] = str(sock_oracle.fileno())
            oracle_fds.append(sock_oracle.fileno())
        for fd in (report_w, job_r):
            os.set_inheritable(fd, True)
        memory_mb = max(shape.host_memory_mb, 8192) * 2
        timeout = idle_s if idle_s is not None else timeout_s
        self.oracle = SandboxSpec(
            argv=[shape.python, "-m", "runners.oracle"],
            workdir=dirs.oracle,
            env=_env(oracle_env, shape.device, shape.gpu),
            timeout_s=timeout,
            output_cap_bytes=64 * 1024,
            memory_mb=memory_mb,
            pass_fds=tuple(oracle_fds),
            ro_paths=(*ro, dirs.problem),
            allow_gpu=gpu,
            gpu_node=shape.gpu.node if shape.gpu is not None else None,
            require_sandbox=shape.require_sandbox,
            max_processes=64,
            disk_mb=64 * 1024,  # its host arenas are memory files as large as the largest inputs (sparse)
            cancel=self.oracle_cancel,
            handover=self.handover,
        )
        sub_env = {**dict(shape.submission_env), SOCKET_FD_ENV: str(sock_sub.fileno())}
        if gpu:
            arch = sysinfo.compute_arch(shape.gpu.index) if shape.gpu is not None else ""
            sub_env[WARM_ENV] = arch or WARM_TOOLCHAIN_ONLY
        self.submission = SandboxSpec(
            argv=[*shape.prefix, shape.python, "-m", "runners.submission"],
            workdir=dirs.submission,
            env=_env(sub_env, shape.device, shape.gpu),
            timeout_s=timeout,
            output_cap_bytes=shape.output_cap_bytes,
            max_output_bytes=max(SUBMISSION_MAX_OUTPUT_BYTES, 2 * shape.output_cap_bytes),
            memory_mb=shape.host_memory_mb,
            pass_fds=(sock_sub.fileno(),),
            ro_paths=(*ro, *(Path(dirs.submission) / rel for rel in shape.shared_ro)),
            allow_gpu=gpu,
            gpu_node=shape.gpu.node if shape.gpu is not None else None,
            require_sandbox=shape.require_sandbox,
            cancel=self.sub_cancel,
            handover=self.handover,
        )
        self._own_ends: dict[str, list[Any]] = {"oracle": [report_w, job_r, sock_oracle], "submission": [sock_sub]}

    def start(self) -> None:
        """Start both sandboxes (each in a thread that waits for it to end)."""
        self.threads = [threading.Thread(target=self._run, args=("oracle", self.oracle), daemon=True,
                                         name="kernelcup-oracle")]  # fmt: skip
        if self.shape.start_submission:
            self.threads.append(threading.Thread(target=self._run, args=("submission", self.submission), daemon=True,
                                                 name="kernelcup-sub"))  # fmt: skip
        self.started_at = time.monotonic()
        for t in self.threads:
            t.start()

    def _started(self, name: str) -> None:
        """The child holds its ends now: close ours, so each side sees the other's exit as end of file."""
        with self._lock:
            ends, self._own_ends[name] = self._own_ends[name], []
            close_ends(ends, self.fds_to_close)

    def _run(self, name: str, spec: SandboxSpec) -> None:
        try:
            self.outcomes[name] = run_sandboxed(spec, on_start=lambda: self._started(name))
        except SandboxUnavailable as exc:
            self.errors["unavailable"] = str(exc)
        except Exception as exc:
            self.errors[name] = f"{type(exc).__name__}: {exc}"
        finally:
            self._started(name)  # (again) if the sandbox never started: the reader then sees end of file

    def waiting(self, margin_s: float = 0.0) -> bool:
        """A pre-started set that may still take a job: both processes running, not handed over, and more than
        ``margin_s`` of its idle limit left (so it is not killed for idling just as its job arrives)."""
        if self.handover is None or self.handed_over or self.errors or not self.threads:
            return False
        if time.monotonic() - self.started_at > self.handover.idle_s - margin_s:
            return False
        return all(t.is_alive() for t in self.threads)

    def hand_over(self, job: Job, timeout_s: float) -> float:
        """Give the processes their job (the only way any of it reaches them); returns the moment, from which their
        time limit (``timeout_s``) counts."""
        self.handed_over = True
        at = self.handover.give(timeout_s) if self.handover is not None else time.monotonic()
        with contextlib.suppress(BrokenPipeError):  # the evaluator never started: its outcome says why
            os.write(self.job_w, (job.model_dump_json() + "\n").encode())
        self._close_job_pipe()
        return at

    def _close_job_pipe(self) -> None:
        with self._lock:
            if self.job_w in self.fds_to_close:
                self.fds_to_close.remove(self.job_w)
                with contextlib.suppress(OSError):
                    os.close(self.job_w)

    def stop(self, join_s: float = 30.0) -> None:
        """Kill both process trees (if still running), wait for their outcomes, release every descriptor."""
        self.oracle_cancel.set()
        self.sub_cancel.set()
        for t in self.threads:
            t.join(timeout=join_s)
        with self._lock:
            for fd in self.fds_to_close:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.fds_to_close = []
        for sock in self._socks:
            sock.close()


STARTUP_WAITS = {"baseline": "timing the reference (to compare with the submission)"}
"""What a run's start-up heartbeat says it waits on, by the evaluator's last phase (else its processes' start)."""


@dataclass(frozen=True)
class SessionSpec:
    """What one session runs (the executor's, ``runners.entry._Execution._session``): the request, the evaluator's
    job, the job's folders, the sandboxes' shape (``Shape``: the interpreter, the profiler in front of the
    submission process, the read-only binds, whether the submission process starts), the run's limits, where its
    progress goes, what cancels it, and a pre-started set of its shape with what to do once the job is handed
    over."""

    request: RunRequest
    job: Job
    dirs: Any
    shape: Shape
    bounds: Bounds | None = None
    """The run's limits (``runners.entry.clock``); None: the request's, with the default start-up limit."""
    on_progress: ProgressCallback | None = None
    cancel: threading.Event | None = None
    prestarted: Launch | None = None
    """A pre-started set of this run's shape (runners/entry/prestart.py), or None: start both processes now."""
    after_handover: Callable[[], None] | None = None
    """Called once the job is handed over (a long-lived runner pre-starts the next run's set there)."""


EXIT_GRACE_S = 5.0
"""How long a submission process that the evaluator saw end may take to be reaped (its sandbox's supervisor
reports its status; the exit of a CUDA process takes ~0.15 s) before the runner stops it anyway."""


class Session:
    """One run's processes from the hand-over of its job to the evaluator's last report (``run``)."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec
        self.request, self.job, self.dirs = spec.request, spec.job, spec.dirs
        self.shape = spec.shape
        """The sandboxes' shape; a cold run starts its processes with it (a test may replace it before ``run``)."""
        self.on_progress, self.cancel = spec.on_progress, spec.cancel
        self.report = Report()
        self.started = time.monotonic()
        self.bounds = spec.bounds or bounds_for(spec.request, DEFAULT_STARTUP_S)
        """The run's limits (``runners.entry.clock``): the platform's start-up, then the submission's own."""
        self.clock: RunClock | None = None
        self.expired = ("", "")

    def emit(self, phase: str, detail: str = "", waited_s: float | None = None) -> None:
        if self.on_progress is None:
            return
        if phase == "baseline":  # the evaluator's own step before the submission loads: shown as part of starting
            phase, detail = Phase.STARTING.value, f"{detail} (to compare with the submission)"
        with contextlib.suppress(ValueError, Exception):
            self.on_progress(ProgressEvent(phase=Phase(phase), detail=detail, waited_s=waited_s))

    def let_submission_end(self, thread: threading.Thread) -> None:
        """When the evaluator saw the submission process end by itself, wait (briefly) for that process's exit
        status before the sandboxes are stopped: otherwise a loaded machine's race reports the runner's own kill
        (SIGKILL) instead of the ``os._exit(0)`` the submission did."""
        if self.report.fatal is not None and self.report.fatal.message == SUBMISSION_EXITED:
            thread.join(timeout=EXIT_GRACE_S)

    def run(self) -> Outcomes:
        time_limit = self.bounds.total_s
        launch = self.spec.prestarted
        if launch is None:
            launch = Launch(self.shape, self.dirs, timeout_s=time_limit + 15)
            launch.start()
        try:
            # Phases count from the hand-over; a pre-started set's start is recorded before it (a negative time).
            self.started = launch.hand_over(self.job, time_limit + 15)
            if launch.handover is not None:
                self.report.times["prestarted"] = round(launch.started_at - self.started, 3)
            if self.spec.after_handover is not None:
                with contextlib.suppress(Exception):
                    self.spec.after_handover()
            deadline = self.started + time_limit + 20
            self._read(launch.report_r, launch.oracle_cancel, launch.sub_cancel, launch=launch)
            if len(launch.threads) > 1:
                self.let_submission_end(launch.threads[1])
            # The evaluator has reported everything (or is gone): nothing either process does from here on counts,
            # so both trees are killed at once rather than waited for (tearing down two CUDA contexts takes seconds).
            if not self.report.done and not self.expired[0]:
                launch.threads[0].join(timeout=max(deadline - time.monotonic(), 1.0))
        finally:
            launch.stop()
            # Both process trees are gone: the run's own time ends here (what follows is the result's making).
            self.report.times["stopped"] = round(time.monotonic() - self.started, 3)
        cancelled = self.cancel is not None and self.cancel.is_set()
        result = Outcomes(self.report, launch.outcomes["oracle"], launch.outcomes["submission"], cancelled)
        result.expired, result.expired_message = self.expired
        result.unavailable = launch.errors.get("unavailable", "")
        if launch.errors.get("oracle") or launch.errors.get("submission"):
            raise RuntimeError(launch.errors.get("oracle") or launch.errors.get("submission"))
        return result

    def _read(self, fd: int, *cancels: threading.Event, launch: Launch | None = None) -> None:
        """Read the evaluator's report until it is done, ends, or the step it is in runs out of time
        (``runners.entry.clock``: then every process of the run is stopped and ``self.expired`` says why)."""
        self.clock = clock = RunClock(self.request, self.bounds, self.started,
                                      reference_only=not self.shape.start_submission)  # fmt: skip
        hard_end = self.started + self.bounds.total_s + 20
        buf = bytearray()
        total = 0
        heard = beat = time.monotonic()
        while True:
            if self.cancel is not None and self.cancel.is_set():
                for c in cancels:
                    c.set()
                return
            now = time.monotonic()
            step = clock.step()
            if now > step.deadline or now > hard_end:
                self._expire(step, now, cancels, launch)
                return
            if now - max(heard, beat) >= HEARTBEAT_S:  # a line every 10 s while nothing else is said
                beat = now
                self._heartbeat(step, now)
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            heard = time.monotonic()
            total += len(chunk)
            if total > MAX_REPORT_BYTES:
                raise ReportError("the evaluator's report was larger than the limit")
            start = len(buf)
            buf += chunk
            # Lines are cut where a newline is found in the new chunk only (never a rescan of the whole buffer).
            cut = buf.rfind(b"\n", start)
            if cut < 0:
                if len(buf) > MAX_REPORT_LINE:
                    raise ReportError("the evaluator's report was larger than the limit")
                continue
            lines, buf = bytes(buf[:cut]).split(b"\n"), buf[cut + 1 :]
            for line in lines:
                self._handle(line)
                if self.report.done:
                    return
            if len(buf) > MAX_REPORT_LINE:
                raise ReportError("the evaluator's report was larger than the limit")

    def _heartbeat(self, step: Step, now: float) -> None:
        phase = self.report.phase if self.report.phase in {p.value for p in Phase} else Phase.STARTING.value
        what = step.what
        if step.kind == "startup":  # the phase is 'starting' already: say what the start waits on
            phase = Phase.STARTING.value
            what = STARTUP_WAITS.get(self.report.phase or "", "starting the run's processes")
        waited = now - step.since
        self.emit(phase, f"{what}: {waited:.0f} s so far (limit {step.limit_s:.0f} s)", round(waited, 1))

    def _expire(self, step: Step, now: float, cancels: tuple[threading.Event, ...], launch: Launch | None) -> None:
        """A step ran out of its time: say whose fault it is and stop every process of the run."""
        rep = self.report
        if step.kind == "startup":
            message = overloaded_message(step, now, rep.phase, "")
            log.warning("%s (problem %s, %s run, %.0f s after the hand-over)", message, self.request.problem,
                        self.request.mode.value, now - self.started)  # fmt: skip
            self.expired = ("overloaded", message)
        elif step.kind == "reference":
            call = ""
            if launch is not None:
                call = hung_call(self._evaluator_stack(launch), str(Path(self.dirs.problem)))
            self.expired = ("problem", reference_hang_message(step, call))
        else:
            assert self.clock is not None
            self.expired = ("timeout", user_timeout_message(self.clock, step, now))
        for c in cancels:
            c.set()

    def _evaluator_stack(self, launch: Launch) -> str:
        """The evaluator's Python stack: SIGABRT makes its faulthandler print it to its stderr, which the sandbox
        captures ('' where the process cannot be found or says nothing within a few seconds)."""
        pid = _holder_of(launch.report_r, "runners.oracle")
        if pid is None:
            return ""
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGABRT)
        launch.threads[0].join(timeout=5.0)
        outcome = launch.outcomes.get("oracle")
        return outcome.stderr if outcome is not None else ""

    def _mark(self, name: str) -> None:
        self.report.times.setdefault(name, round(time.monotonic() - self.started, 3))
        if self.clock is not None:
            self.clock.saw(name, time.monotonic())

    def _handle(self, line: bytes) -> None:
        rep = self.report
        if rep.done:
            raise ReportError("the evaluator reported after it was done")
        if len(rep.tests) + len(rep.benches) > MAX_REPORTS:
            raise ReportError("the evaluator sent too many reports")
        try:
            msg = REPORT.validate_json(line)
        except ValidationError as exc:
            raise ReportError(f"a malformed report: {error_message(exc.errors()[0])}") from None
        if rep.hello is None and not isinstance(msg, RHello | RFatal | RDone):
            raise ReportError(f"{type(msg).__name__} before hello")
        if not isinstance(msg, RTestReference):  # (a step of a test, not a phase)
            self._mark(msg.t if not isinstance(msg, RProgress) else msg.phase)
        if isinstance(msg, RBench):
            self._mark(f"benchmark {msg.index + 1}")
        if isinstance(msg, RHello):
            rep.hello = msg
        elif isinstance(msg, RProgress):
            rep.phase = msg.phase
            self.emit(msg.phase, msg.detail)
        elif isinstance(msg, RCompiled):
            if rep.compiled is not None:
                raise ReportError("compiled twice")
            rep.compiled = msg
        elif isinstance(msg, RTestReference):
            if msg.index != len(rep.tests) or msg.index >= len(self.request.tests) or rep.benches:
                raise ReportError(f"the reference's time on test {msg.index} out of order")
            if self.clock is not None:
                self.clock.saw_test_reference(msg.index, msg.seconds)
        elif isinstance(msg, RTest):
            if msg.index != len(rep.tests) or msg.index >= len(self.request.tests) or rep.benches:
                raise ReportError(f"test result {msg.index} out of order")
            rep.tests.append(msg)
        elif isinstance(msg, RBench):
            self._check_bench(msg)
            rep.benches.append(msg)
        elif isinstance(msg, RBaseline):
            self._check_baseline(msg)
            rep.baselines.setdefault(msg.label, []).append(msg)
            rep.baselines_at = time.monotonic()
            if msg.label == REFERENCE_BASELINE.label and not msg.error and self.clock is not None:
                # The reference as this run timed it, on this machine as it is now: the bound of this case's steps.
                self.clock.saw_reference(msg.index, stats.timing_stats(msg.samples_ns).median_ns)
        elif isinstance(msg, RProfile):
            if rep.profile is not None or self.request.mode is not Mode.PROFILE:
                raise ReportError("an unexpected profile")
            rep.profile = msg
        elif isinstance(msg, RCalibration):
            if rep.calibration is not None or rep.compiled is not None or self.job.device != "cuda":
                raise ReportError("an unexpected calibration")
            rep.calibration = msg
            rep.calibration_at = time.monotonic()
        elif isinstance(msg, RFatal):
            if rep.fatal is not None:
                raise ReportError("two fatal reports")
            rep.fatal = msg
        elif isinstance(msg, RDone):
            rep.done = True

    def _check_baseline(self, msg: RBaseline) -> None:
        wanted = {label for label, _ in self.job.baselines}
        if msg.label not in wanted or self.report.compiled is not None:
            raise ReportError(f"an unexpected baseline result {msg.label!r}")
        got = self.report.baselines.get(msg.label, [])
        if (got and got[-1].error) or msg.index != len(got) or msg.index >= len(self.request.benchmarks):
            raise ReportError(f"baseline {msg.label!r} result {msg.index} out of order")
        if not msg.error and not (1 <= len(msg.samples_ns) <= self.request.timing.max_samples):
            raise ReportError(f"baseline {msg.label!r} case {msg.index} has {len(msg.samples_ns)} samples")

    def _check_bench(self, msg: RBench) -> None:
        rep, req = self.report, self.request
        if req.mode not in (Mode.BENCHMARK, Mode.RANKED):
            raise ReportError("a benchmark result outside a timed mode")
        if req.mode is Mode.RANKED and (
            len(rep.tests) != len(req.tests) or not all(t.verdict.passed for t in rep.tests)
        ):
            raise ReportError("a benchmark result before every test passed")
        if msg.index != len(rep.benches) or msg.index >= len(req.benchmarks):
            raise ReportError(f"benchmark result {msg.index} out of order")
        if msg.verdict.passed and not (1 <= len(msg.samples_ns) <= req.timing.max_samples):
            raise ReportError(f"benchmark {msg.index} has {len(msg.samples_ns)} samples")
