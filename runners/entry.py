"""Run one request on this machine and return its result: the runner's entry point.

    python -m runners.entry REQUEST.json RESULT.json     # '-' for stdin / stdout

Every launcher ends here (the local launcher in-process, Modal and GitHub Actions through the CLI).
This module is the trusted parent: it materialises the job folder, starts the evaluation process
(``runners.harness``) in the sandbox, answers its per-call seed requests in ranked mode (the secret
never leaves this process), verifies every frame of the result channel, computes statistics and the
score from raw samples, and decides the verdict. ``run_request`` never raises for anything a
submission does; an unexpected failure of its own becomes ``Verdict.INFRASTRUCTURE_ERROR``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from runners.contract import (
    BenchmarkResult,
    Mode,
    Phase,
    ProgressEvent,
    RunRequest,
    RunResult,
    TestResult,
    Verdict,
    worst,
)
from runners.harness import channel, stats, sysinfo
from runners.settings import RunnerSettings

ProgressCallback = Callable[[ProgressEvent], None]
REPO_ROOT = Path(__file__).resolve().parent.parent
_SUFFIX_RUNTIME = {".py": "py", ".cu": "cu", ".cuh": "cu"}
_KILL_SIGNALS = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "arithmetic fault",
    signal.SIGILL: "illegal instruction",
    signal.SIGABRT: "aborted",
    signal.SIGKILL: "killed",
}


class _Rejected(Exception):
    def __init__(self, verdict: Verdict, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict


def derive_seed(secret: int | str, case: int, call: int) -> int:
    """The seed of one timed call of a ranked run: unpredictable without the secret, reproducible with it."""
    digest = hmac.new(str(secret).encode(), f"{case}:{call}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:6], "big")


def _check_submission(request: RunRequest) -> tuple[str, str]:
    """(runtime key, text) of the submission, or _Rejected with a message the user can act on."""
    sub = request.submission
    size = len(sub.content)
    if size > request.limits.max_submission_bytes:
        raise _Rejected(
            Verdict.REJECTED,
            f"{sub.name} is {size:,} bytes; the limit is {request.limits.max_submission_bytes:,} bytes",
        )
    suffix = PurePosixPath(sub.name).suffix.lower()
    runtime = _SUFFIX_RUNTIME.get(suffix)
    if runtime is None:
        raise _Rejected(
            Verdict.REJECTED,
            f"{sub.name}: unknown file type {suffix or '(none)'}; submit a .py file "
            "(PyTorch, Triton, inline CUDA) or a .cu file for a CUDA problem",
        )
    if runtime == "cu" and "harness.cu" not in request.files:
        raise _Rejected(
            Verdict.REJECTED,
            f"problem {request.problem} takes Python submissions (custom_kernel in a .py file), not .cu files",
        )
    if b"\x00" in sub.content:
        raise _Rejected(Verdict.REJECTED, f"{sub.name} is not a text file (it contains NUL bytes)")
    try:
        text = sub.content.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"{sub.name} is not UTF-8 text (invalid byte at offset {exc.start})"
        raise _Rejected(Verdict.REJECTED, message) from None
    if not text.strip():
        raise _Rejected(Verdict.REJECTED, f"{sub.name} is empty; start from one of the problem's templates")
    if request.device == "cpu" and (runtime == "cu" or ("load_inline" in text and "cuda_sources" in text)):
        raise _Rejected(
            Verdict.NEEDS_CUDA,
            "this submission needs a CUDA device: it compiles CUDA code; run it on a GPU runner or with --device cuda",
        )
    return runtime, text


def _write_job(job_dir: Path, request: RunRequest, runtime: str) -> str:
    for rel, text in request.files.items():
        path = PurePosixPath(rel)
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise ValueError(f"problem file {rel!r} must be a relative path inside the problem")
        target = job_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    name = "submission.py" if runtime == "py" else "submission.cu"
    (job_dir / name).write_bytes(request.submission.content)
    return name


class _Session:
    """One run: the result-channel reader, the seed oracle, and what the evaluation process reported."""

    def __init__(self, request: RunRequest, key: bytes, on_progress: ProgressCallback | None) -> None:
        self.request = request
        self.reader = channel.FrameReader(key)
        self.on_progress = on_progress
        self.frames: list[dict[str, Any]] = []
        self.tampered: str | None = None
        self.done = False
        self.phase = "starting"
        self.seed_calls: dict[int, int] = {}
        self.stop = threading.Event()

    def emit(self, phase: Phase, detail: str = "") -> None:
        if self.on_progress is not None:
            with contextlib.suppress(Exception):
                self.on_progress(ProgressEvent(phase=phase, detail=detail))

    def serve(self, result_fd: int, control_fd: int, header: bytes) -> None:
        """Read the result channel until it closes; owns ``control_fd`` and closes it on the way out, so an
        evaluation process waiting for an answer (a seed) after a channel error sees EOF at once instead of
        hanging until the time limit."""
        try:
            self._serve(result_fd, control_fd, header)
        finally:
            with contextlib.suppress(OSError):
                os.close(control_fd)

    def _serve(self, result_fd: int, control_fd: int, header: bytes) -> None:
        try:
            os.write(control_fd, header)
            buf = b""
            while True:
                ready, _, _ = select.select([result_fd], [], [], 0.2)
                if not ready:
                    if self.stop.is_set():
                        return
                    continue
                chunk = os.read(result_fd, 1 << 16)
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self._handle(line + b"\n", control_fd)
                if len(buf) > channel.MAX_FRAME_BYTES:
                    raise channel.ChannelError("a result frame was larger than the limit")
        except channel.ChannelError as exc:
            self.tampered = str(exc)
        except OSError:
            return  # the process is gone (EPIPE on the control pipe); its exit status tells the story

    def _handle(self, line: bytes, control_fd: int) -> None:
        if self.tampered or self.done:
            raise channel.ChannelError("frames arrived after the run was finished")
        frame = self.reader.verify(line)
        kind = frame.get("t")
        if kind == "seed":
            os.write(control_fd, (json.dumps({"seed": self._seed(frame)}) + "\n").encode())
        elif kind == "progress":
            self.phase = str(frame.get("phase", self.phase))
            with contextlib.suppress(ValueError):
                self.emit(Phase(self.phase), str(frame.get("detail", "")))
        elif kind == "done":
            self.done = True
        else:
            self.frames.append(frame)

    def _seed(self, frame: dict[str, Any]) -> int:
        if self.request.mode is not Mode.RANKED:
            raise channel.ChannelError("a seed was requested outside a ranked run")
        case = int(frame.get("case", -1))
        if not 0 <= case < len(self.request.benchmarks):
            raise channel.ChannelError("a seed was requested for an unknown benchmark")
        # The public half of a ranked submission has no secret: its timed calls still get fresh inputs (so no
        # answer can be cached across calls), derived from the case's public seed and reproducible by anyone.
        secret: int | str = self.request.seed
        if secret is None:
            secret = f"public:{self.request.benchmarks[case].get('seed', case)}"
        # The parent's own counter, not the child's: asking again gives a new input, never a chosen one.
        call = self.seed_calls.get(case, 0)
        if call > 4 * self.request.timing.max_samples + 16:
            raise channel.ChannelError("more seeds were requested than a benchmark can use")
        self.seed_calls[case] = call + 1
        return derive_seed(secret, case, call)


def _job_header(
    request: RunRequest, job_dir: Path, submission: str, runtime: str, profiler: str | None, key: bytes
) -> bytes:
    job = {
        "job_dir": str(job_dir),
        "mode": request.mode.value,
        "lang": runtime,
        "device": request.device,
        "submission": submission,
        "display_name": PurePosixPath(request.submission.name).name,
        "tests": request.tests,
        "benchmarks": request.benchmarks,
        "timing": request.timing.model_dump(mode="json"),
        "profiler": profiler,
    }
    return (json.dumps({"job": job, "key": key.hex()}) + "\n").encode()


def _argv(settings: RunnerSettings, request: RunRequest, job_dir: Path) -> tuple[list[str], str | None]:
    python = settings.python or sys.executable
    argv = [python, "-m", "runners.harness"]
    ncu = shutil.which("ncu") if settings.ncu else None
    if request.mode is Mode.PROFILE and request.device != "cpu" and ncu:
        from runners.harness.evaluate import NVTX_RANGE

        wrap = [
            ncu,
            "--target-processes",
            "all",
            "--nvtx",
            "--nvtx-include",
            f"{NVTX_RANGE}/",
            "--clock-control",
            "none",
            "--print-summary",
            "per-kernel",
            "--log-file",
            str(job_dir / "ncu.log"),
        ]
        return wrap + argv, "ncu"
    return argv, "torch"


def run_request(
    request: RunRequest,
    on_progress: ProgressCallback | None = None,
    *,
    settings: RunnerSettings | None = None,
    require_sandbox: bool = False,
    cancel: threading.Event | None = None,
) -> RunResult:
    """Evaluate ``request`` on this machine. Never raises for submission faults.

    Setting ``cancel`` (from any thread) kills the run's processes at once; the result is then an infrastructure
    error saying so, which nothing should store as the submission's outcome."""
    started = datetime.now(UTC)
    t0 = time.monotonic()
    try:
        result = _run(request, on_progress, settings or RunnerSettings(), require_sandbox, cancel)
    except Exception as exc:
        result = RunResult.infrastructure_error(
            request.mode, f"the runner failed: {type(exc).__name__}: {exc}", stderr=traceback.format_exc()[-4000:]
        )
    result.started_at = started
    result.request_sha256 = request.digest()
    result.nonce = request.nonce
    result.finished_at = datetime.now(UTC)
    result.wall_time_s = time.monotonic() - t0
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
) -> RunResult:
    from runners.sandbox import SandboxSpec, SandboxUnavailable, python_ro_paths, run_sandboxed

    if on_progress is not None:
        with contextlib.suppress(Exception):
            on_progress(ProgressEvent(phase=Phase.STARTING, detail=request.problem))
    system = sysinfo.collect(request.device)
    try:
        runtime, _ = _check_submission(request)
    except _Rejected as rej:
        system.sandbox_note = "nothing was run: the file was refused before evaluation"
        return RunResult(verdict=rej.verdict, message=str(rej), mode=request.mode, system=system)

    if settings.job_root is not None:
        settings.job_root.mkdir(parents=True, exist_ok=True)
    job_dir = Path(tempfile.mkdtemp(prefix="kernelcup-job-", dir=settings.job_root)).resolve()
    result_r = result_w = control_r = control_w = -1
    try:
        submission = _write_job(job_dir, request, runtime)
        key = channel.new_key()
        argv, profiler = _argv(settings, request, job_dir)
        result_r, result_w = os.pipe()
        control_r, control_w = os.pipe()
        os.set_inheritable(result_w, True)
        os.set_inheritable(control_r, True)
        env = {
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *[p for p in sys.path if p and Path(p).is_dir()]]),
            "PYTHONUNBUFFERED": "1",
            channel.RESULT_FD_ENV: str(result_w),
            channel.CONTROL_FD_ENV: str(control_r),
        }
        if request.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
            env["TRITON_INTERPRET"] = "1"
        ro = tuple(
            dict.fromkeys(
                [REPO_ROOT, *python_ro_paths(), *[Path(p).resolve() for p in sys.path if p and Path(p).is_dir()]]
            )
        )
        spec = SandboxSpec(
            argv=argv,
            workdir=job_dir,
            env=env,
            timeout_s=request.limits.compile_timeout_s + request.limits.run_timeout_s,
            output_cap_bytes=request.limits.output_cap_bytes,
            memory_mb=request.limits.host_memory_mb,
            pass_fds=(result_w, control_r),
            ro_paths=ro,
            allow_gpu=request.device != "cpu",
            require_sandbox=require_sandbox,
            cancel=cancel,
        )
        session = _Session(request, key, on_progress)
        header = _job_header(request, job_dir, submission, runtime, profiler, key)
        reader = threading.Thread(
            target=session.serve, args=(result_r, control_w, header), daemon=True, name="kernelcup-result-channel"
        )
        reader.start()
        control_w = -1  # the reader thread owns it now and closes it when it stops
        try:
            outcome = run_sandboxed(spec)
        except SandboxUnavailable as exc:
            session.stop.set()
            return RunResult.infrastructure_error(request.mode, str(exc), system=system)
        finally:
            for fd in (result_w, control_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            result_w = control_r = -1
        session.stop.set()
        reader.join(settings.reader_grace_s)
        if outcome.cancelled:
            return RunResult.infrastructure_error(request.mode, "the run was cancelled", system=system)
        if request.device != "cpu":
            system.sm_clock_end_mhz = sysinfo.sm_clock_mhz()
        profile_text = None
        if profiler == "ncu" and (job_dir / "ncu.log").exists():
            profile_text = (job_dir / "ncu.log").read_text(errors="replace")[-64_000:]
        result = _build_result(request, session, outcome, system, profile_text)
        return _strip_job_dir(result, job_dir)
    finally:
        for fd in (result_r, result_w, control_r, control_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if not settings.keep_job_dirs:
            shutil.rmtree(job_dir, ignore_errors=True)


def _build_result(
    request: RunRequest, session: _Session, outcome: Any, system: Any, profile_text: str | None
) -> RunResult:
    system.sandboxed = outcome.sandboxed
    system.sandbox_note = outcome.sandbox_note
    tests: list[TestResult] = []
    benches: list[BenchmarkResult] = []
    fatal: dict[str, Any] | None = None
    compile_output = ""
    profile = profile_text
    for f in session.frames:
        kind = f.get("t")
        if kind == "hello":
            system.torch = str(f.get("torch") or system.torch or "") or None
            system.cuda = f.get("cuda") or system.cuda
            system.gpu_name = system.gpu_name or f.get("gpu")
        elif kind == "compiled":
            compile_output = str(f.get("output", ""))
        elif kind == "test":
            i = int(f["index"])
            tests.append(
                TestResult(
                    index=i,
                    case=request.tests[i],
                    verdict=Verdict(f["verdict"]),
                    message=str(f.get("message", "")),
                    duration_s=float(f.get("duration_s", 0.0)),
                )
            )
        elif kind == "bench":
            i = int(f["index"])
            samples = [float(x) for x in f.get("samples_ns") or []]
            benches.append(
                BenchmarkResult(
                    index=i,
                    case=request.benchmarks[i],
                    verdict=Verdict(f["verdict"]),
                    message=str(f.get("message", "")),
                    stats=stats.timing_stats(samples) if samples else None,
                    bytes_moved=f.get("bytes"),
                    flops=f.get("flops"),
                )
            )
        elif kind == "profile":
            profile = (profile + "\n\n" if profile else "") + str(f.get("text", ""))
        elif kind == "fatal":
            fatal = f
            compile_output = str(f.get("compile_output") or compile_output)

    base = dict(
        mode=request.mode,
        tests=tests,
        benchmarks=benches,
        compile_output=compile_output,
        stdout=outcome.stdout,
        stderr=outcome.stderr,
        stdout_truncated=outcome.stdout_truncated,
        stderr_truncated=outcome.stderr_truncated,
        system=system,
        profile=profile,
    )
    if session.tampered:
        return RunResult(
            verdict=Verdict.REJECTED, message=f"the result channel was tampered with: {session.tampered}", **base
        )
    if outcome.timed_out:
        limit = request.limits.compile_timeout_s + request.limits.run_timeout_s
        return RunResult(
            verdict=Verdict.TIMEOUT,
            message=(
                f"the run did not finish within {limit:.0f} s "
                f"(it was {session.phase}); look for an endless loop or a far too slow kernel"
            ),
            **base,
        )
    if outcome.out_of_memory:
        return RunResult(
            verdict=Verdict.OUT_OF_MEMORY,
            message=(f"the run used more than {request.limits.host_memory_mb} MB of host memory and was stopped"),
            **base,
        )
    killed = getattr(outcome, "killed_reason", "")
    if killed and not session.done:
        verdict = Verdict.RUNTIME_ERROR
        return RunResult(verdict=verdict, message=f"the run was stopped: {killed}", **base)
    if fatal is not None:
        verdict = Verdict(fatal["verdict"])
        return RunResult(verdict=verdict, message=str(fatal.get("message", "")), **base)
    if not session.done:
        if outcome.signal:
            name = _KILL_SIGNALS.get(outcome.signal, f"signal {outcome.signal}")
            msg = f"the process crashed ({name}, signal {outcome.signal}) while {session.phase}"
        else:
            msg = (
                f"the process exited with code {outcome.returncode} while {session.phase}, before the harness "
                "finished; a submission must not exit (sys.exit, os._exit) or kill its own process"
            )
        return RunResult(verdict=Verdict.RUNTIME_ERROR, message=msg, **base)

    verdicts = [t.verdict for t in tests] + [b.verdict for b in benches]
    verdict = worst(verdicts)
    message = ""
    if verdict is Verdict.WRONG_ANSWER:
        failed = [t for t in tests if t.verdict is Verdict.WRONG_ANSWER]
        message = f"{len(failed)} of {len(tests)} tests failed; first: test {failed[0].index + 1}: {failed[0].message}"
    elif request.mode in (Mode.BENCHMARK, Mode.RANKED) and len(benches) < len(request.benchmarks):
        verdict, message = Verdict.INFRASTRUCTURE_ERROR, "the harness returned fewer benchmark results than cases"
    score = None
    if verdict.passed and request.mode in (Mode.BENCHMARK, Mode.RANKED) and benches:
        score = stats.score([b.stats.median_ns for b in benches if b.stats], request.ranking_by)
    if verdict.passed:
        message = _summary(request, tests, benches, score)
    return RunResult(verdict=verdict, message=message, score_ns=score, **base)


def _strip_job_dir(result: RunResult, job_dir: Path) -> RunResult:
    """Paths inside the job folder read as plain file names in messages (the folder is gone afterwards)."""
    prefix = f"{job_dir}/"
    result.message = result.message.replace(prefix, "")
    result.compile_output = result.compile_output.replace(prefix, "")
    for item in [*result.tests, *result.benchmarks]:
        item.message = item.message.replace(prefix, "")
    return result


def _summary(request: RunRequest, tests: list[TestResult], benches: list[BenchmarkResult], score: float | None) -> str:
    parts = []
    if tests:
        parts.append(f"{len(tests)} of {len(tests)} tests passed")
    if score is not None:
        parts.append(f"score {score / 1000:.3f} µs ({request.ranking_by.value} of {len(benches)} benchmark medians)")
    notes = [b.message for b in benches if b.message]
    if notes:
        parts.append(notes[0])
    return "; ".join(parts) or "accepted"


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

        result = run_request(request, progress, require_sandbox=require)
    text = result.model_dump_json()
    if dst == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    else:
        tmp = Path(dst).with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(dst)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
