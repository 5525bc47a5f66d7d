"""One run's processes: the evaluator and the submission process, each in a sandbox of its own, and the report.

The entry makes the pipes and the socket, starts both sandboxes at once (their interpreters start in parallel),
writes the job to the evaluator, and reads the evaluator's report until it ends, enforcing its order and its caps.
Whatever happens, both process trees are gone when :meth:`Session.run` returns.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runners.contract import Mode, Phase, ProgressEvent, RunRequest
from runners.gpus import Gpu
from runners.ipc.protocol import (
    REPORT,
    Job,
    RBaseline,
    RBench,
    RCompiled,
    RDone,
    RFatal,
    RHello,
    RProfile,
    RProgress,
    RTest,
)
from runners.ipc.wire import socket_pair
from runners.oracle.base import JOB_FD_ENV, REPORT_FD_ENV
from runners.sandbox import ProcessOutcome, SandboxSpec, SandboxUnavailable, python_ro_paths, run_sandboxed
from runners.submission.serve import SOCKET_FD_ENV
from runners.validation import error_message

REPO_ROOT = Path(__file__).resolve().parents[2]
MAX_REPORT_LINE = 4 * 1024 * 1024
MAX_REPORT_BYTES = 64 * 1024 * 1024
MAX_REPORTS = 20_000
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


def _import_roots() -> list[Path]:
    """The folders the sandboxed processes import from, in this process's order: this repository first, then every
    folder on ``sys.path``."""
    roots = [REPO_ROOT, *(Path(p).resolve() for p in sys.path if p and Path(p).is_dir())]
    return list(dict.fromkeys(roots))


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


class Session:
    def __init__(
        self,
        request: RunRequest,
        job: Job,
        dirs: Any,
        *,
        python: str,
        submission_argv_prefix: list[str],
        extra_ro: tuple[Path, ...],
        require_sandbox: bool,
        submission_env: dict[str, str] | None = None,
        on_progress: ProgressCallback | None,
        cancel: threading.Event | None,
        start_submission: bool = True,
        gpu: Gpu | None = None,
    ) -> None:
        self.request = request
        self.job = job
        self.dirs = dirs
        self.python = python
        self.prefix = submission_argv_prefix
        self.extra_ro = extra_ro
        self.submission_env = submission_env or {}
        self.require_sandbox = require_sandbox
        self.on_progress = on_progress
        self.cancel = cancel
        self.start_submission = start_submission
        self.gpu = gpu
        self.report = Report()
        self.started = time.monotonic()

    def emit(self, phase: str, detail: str = "") -> None:
        if self.on_progress is None:
            return
        if phase == "baseline":  # the evaluator's own step before the submission loads: shown as part of starting
            phase, detail = Phase.STARTING.value, f"{detail} (once per problem and machine)"
        with contextlib.suppress(ValueError, Exception):
            self.on_progress(ProgressEvent(phase=Phase(phase), detail=detail))

    def run(self) -> Outcomes:
        limits = self.request.limits
        time_limit = self.request.time_limit_s()
        report_r, report_w = os.pipe()
        job_r, job_w = os.pipe()
        sock_oracle, sock_sub = socket_pair()
        fds_to_close = [report_r, report_w, job_r, job_w]
        oracle_cancel, sub_cancel = threading.Event(), threading.Event()
        outcomes: dict[str, ProcessOutcome | None] = {"oracle": None, "submission": None}
        errors: dict[str, str] = {}
        ro = tuple(dict.fromkeys([*_ro_python(), *self.extra_ro]))
        gpu = self.request.device != "cpu"
        oracle_env = {REPORT_FD_ENV: str(report_w), JOB_FD_ENV: str(job_r)}
        if not gpu:
            # The evaluator's checks must not leave OpenMP threads spinning on the cores the submission is timed on.
            oracle_env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
        oracle_fds = [report_w, job_r]
        if self.start_submission:
            oracle_env[SOCKET_FD_ENV] = str(sock_oracle.fileno())
            oracle_fds.append(sock_oracle.fileno())
        for fd in (report_w, job_r):
            os.set_inheritable(fd, True)
        oracle = SandboxSpec(
            argv=[self.python, "-m", "runners.oracle"],
            workdir=self.dirs.oracle,
            env=_env(oracle_env, self.request.device, self.gpu),
            timeout_s=time_limit + 15,
            output_cap_bytes=64 * 1024,
            memory_mb=max(limits.host_memory_mb, 8192) * 2,
            pass_fds=tuple(oracle_fds),
            ro_paths=(*ro, self.dirs.problem),
            allow_gpu=gpu,
            gpu_node=self.gpu.node if self.gpu is not None else None,
            require_sandbox=self.require_sandbox,
            max_processes=64,
            disk_mb=64 * 1024,  # its host arenas are memory files as large as the largest inputs (sparse)
            cancel=oracle_cancel,
        )
        submission = SandboxSpec(
            argv=[*self.prefix, self.python, "-m", "runners.submission"],
            workdir=self.dirs.submission,
            env=_env({**self.submission_env, SOCKET_FD_ENV: str(sock_sub.fileno())}, self.request.device, self.gpu),
            timeout_s=time_limit + 15,
            output_cap_bytes=limits.output_cap_bytes,
            memory_mb=limits.host_memory_mb,
            pass_fds=(sock_sub.fileno(),),
            ro_paths=(*ro, *self.dirs.shared_ro),
            allow_gpu=gpu,
            gpu_node=self.gpu.node if self.gpu is not None else None,
            require_sandbox=self.require_sandbox,
            cancel=sub_cancel,
        )

        own_ends: dict[str, list[Any]] = {"oracle": [report_w, job_r, sock_oracle], "submission": [sock_sub]}
        lock = threading.Lock()

        def started(name: str) -> None:
            """The child holds its ends now: close ours, so each side sees the other's exit as end of file."""
            with lock:
                ends, own_ends[name] = own_ends[name], []
                for end in ends:
                    with contextlib.suppress(OSError, ValueError):
                        if isinstance(end, int):
                            fds_to_close.remove(end)
                            os.close(end)
                        else:
                            end.close()

        def start(name: str, spec: SandboxSpec) -> None:
            try:
                outcomes[name] = run_sandboxed(spec, on_start=lambda: started(name))
            except SandboxUnavailable as exc:
                errors["unavailable"] = str(exc)
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {exc}"
            finally:
                started(name)  # (again) if the sandbox never started: the reader then sees end of file

        threads = [threading.Thread(target=start, args=("oracle", oracle), daemon=True, name="kernelcup-oracle")]
        if self.start_submission:
            threads.append(
                threading.Thread(target=start, args=("submission", submission), daemon=True, name="kernelcup-sub")
            )
        try:
            for t in threads:
                t.start()
            with contextlib.suppress(BrokenPipeError):  # the evaluator never started: its outcome says why
                os.write(job_w, (self.job.model_dump_json() + "\n").encode())
            os.close(job_w)
            fds_to_close.remove(job_w)
            deadline = time.monotonic() + time_limit + 20
            self._read(report_r, deadline, oracle_cancel, sub_cancel)
            # The evaluator has reported everything (or is gone): nothing either process does from here on counts,
            # so both trees are killed at once rather than waited for (tearing down two CUDA contexts takes seconds).
            if not self.report.done:
                threads[0].join(timeout=max(deadline - time.monotonic(), 1.0))
            oracle_cancel.set()
            sub_cancel.set()
            for t in threads:
                t.join(timeout=30.0)
        finally:
            oracle_cancel.set()
            sub_cancel.set()
            for fd in fds_to_close:
                with contextlib.suppress(OSError):
                    os.close(fd)
            sock_oracle.close()
            sock_sub.close()
        cancelled = self.cancel is not None and self.cancel.is_set()
        result = Outcomes(self.report, outcomes["oracle"], outcomes["submission"], cancelled)
        result.unavailable = errors.get("unavailable", "")
        if errors.get("oracle") or errors.get("submission"):
            raise RuntimeError(errors.get("oracle") or errors.get("submission"))
        return result

    def _read(self, fd: int, deadline: float, *cancels: threading.Event) -> None:
        buf = b""
        total = 0
        while True:
            if self.cancel is not None and self.cancel.is_set():
                for c in cancels:
                    c.set()
                return
            if time.monotonic() > deadline:
                return
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            total += len(chunk)
            buf += chunk
            if total > MAX_REPORT_BYTES or len(buf) > MAX_REPORT_LINE:
                raise ReportError("the evaluator's report was larger than the limit")
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self._handle(line)
                if self.report.done:
                    return

    def _mark(self, name: str) -> None:
        self.report.times.setdefault(name, round(time.monotonic() - self.started, 3))

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
        elif isinstance(msg, RProfile):
            if rep.profile is not None or self.request.mode is not Mode.PROFILE:
                raise ReportError("an unexpected profile")
            rep.profile = msg
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
