"""The trusted evaluator: generates every input, checks every output, keeps the clock, never runs user code.

Started by ``runners.entry`` in a sandbox of its own as ``python -m runners.oracle``. It reads the job (with the
ranked secret, which never leaves this process) from a pipe only the entry writes, imports the problem's reference
(the only process that does), and drives the submission process over a Unix socket: it places each call's inputs
in shared memory, opens a window on its own clock around the call (``window``), snapshots the output where the
window closes and checks it against the reference on its own private copy of the inputs. It reports raw facts
(per-test verdicts, per-call samples) to the entry, which computes statistics and the verdict.

Whose fault a failure is (``RFatal.fault``): before the submission process is told to load the file, anything
that goes wrong is the runner's (the process did not start, the sandbox or the interpreter is broken); a failure
in the problem's own code (import, ``generate_input``, a check that cannot read even the reference's output) is
the problem's; after the load, everything the submission process does or fails to do is the submission's.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import math
import os
import secrets
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from runners.contract import TimingSettings, Verdict
from runners.ipc.arena import Arena, ArenaError, Placement, place
from runners.ipc.protocol import (
    AddArena,
    ArenaSpec,
    CallError,
    Hello,
    Job,
    Load,
    Loaded,
    LoadFailed,
    Profile,
    ProfileText,
    Quit,
    RBench,
    RCompiled,
    RDone,
    Ready,
    RFatal,
    RHello,
    RProfile,
    RProgress,
    RTest,
    Setup,
    Trust,
)
from runners.ipc.wire import Wire, socket_pair
from runners.oracle.checking import normalise_check
from runners.oracle.peer import Peer, PeerFailed
from runners.oracle.timing import Sample, sample_of, time_case
from runners.oracle.window import Calibration, CpuWindow, GpuWindow, Window, calibrate
from runners.submission.serve import CALIBRATION, SOCKET_FD_ENV

REPORT_FD_ENV = "KERNELCUP_REPORT_FD"
JOB_FD_ENV = "KERNELCUP_JOB_FD"
PROBLEM_DIR = "problem"
_MIB = 1024 * 1024
SLACK_SHARE = 50
"""Batches hold enough work that the most a rewritten reading could hide in one window is 1/50 of it."""
MAX_BATCH_CALLS = 64
DEFAULT_HEAP = 32 * 1024 * _MIB
"""The submission process's GPU memory unless the runner says otherwise (and never more than half the free)."""
_HOST_ARENA = 8 * 1024 * _MIB  # sparse: only what is written takes memory


class Fatal(Exception):
    def __init__(self, verdict: Verdict, message: str, fault: str, compile_output: str = "") -> None:
        super().__init__(message)
        self.verdict, self.message, self.fault, self.compile_output = verdict, message, fault, compile_output


def derive_seed(secret: int | str, case: int, call: int) -> int:
    """The seed of one timed call of a ranked run: unpredictable without the secret, reproducible with it."""
    digest = hmac.new(str(secret).encode(), f"{case}:{call}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:6], "big")


_CALL_VERDICTS = {
    "oom": Verdict.OUT_OF_MEMORY,
    "needs_cuda": Verdict.NEEDS_CUDA,
    "exit": Verdict.RUNTIME_ERROR,
    "exception": Verdict.RUNTIME_ERROR,
    "bad_output": Verdict.WRONG_ANSWER,
}
_LOAD_VERDICTS = {
    "syntax": Verdict.COMPILE_ERROR,
    "compile": Verdict.COMPILE_ERROR,
    "missing_entry": Verdict.REJECTED,
    "import": Verdict.RUNTIME_ERROR,
    "needs_cuda": Verdict.NEEDS_CUDA,
    "oom": Verdict.OUT_OF_MEMORY,
    "exit": Verdict.RUNTIME_ERROR,
    "unavailable": Verdict.REJECTED,
}


class Reporter:
    """One JSON line per report on the pipe to the entry."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, report: Any) -> None:
        data = (report.model_dump_json() + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]


class Evaluator:
    def __init__(self, job: Job, report: Reporter, peer: Peer | None, workdir: Path) -> None:
        self.job = job
        self.report = report
        self.peer = peer
        self.workdir = workdir
        self.settings = TimingSettings.model_validate(job.timing)
        self.loaded = False
        self.k = 0
        self.arenas: dict[str, Arena] = {}
        self.dev_in = "dev_in"
        self.window: Window | None = None
        self.echo: Any = None
        self.deadline = time.monotonic() + job.time_limit_s  # (the entry kills us a little later)

    # ---- set-up --------------------------------------------------------------------------------------------
    def setup(self) -> None:
        import torch

        self.torch = torch
        self.cuda = self.job.device == "cuda"
        if self.cuda:
            if not torch.cuda.is_available():
                raise Fatal(Verdict.INFRASTRUCTURE_ERROR, "this runner was asked for CUDA but sees no GPU", "runner")
            torch.cuda.set_device(0)
            torch.cuda.init()
        self.report.send(
            RHello(
                torch=str(torch.__version__),
                cuda=torch.version.cuda or getattr(torch.version, "hip", None),
                gpu=torch.cuda.get_device_name() if self.cuda else None,
            )
        )
        problem = self.workdir / PROBLEM_DIR
        sys.path.insert(0, str(problem))
        try:
            from runners.submission.languages import import_file

            self.reference = import_file(problem / "reference.py", "reference")
            self.generate_input = self.reference.generate_input
            self.check = self.reference.check_implementation
        except BaseException as exc:
            raise Fatal(
                Verdict.INFRASTRUCTURE_ERROR, f"the problem's reference.py failed to import:\n{_trace(exc)}", "problem"
            ) from None
        self.speed_of_light = getattr(self.reference, "speed_of_light", None)
        self.ref_kernel = getattr(self.reference, "ref_kernel", None)

    def _new_arena(self, name: str, kind: str, size: int) -> Arena:
        driver = self.driver if kind == "cuda" else None
        arena = Arena.create(self.torch, name, kind, size, driver)
        self.arenas[name] = arena
        return arena

    def connect(self, peer: Peer, arenas: dict[str, Arena], heap: str | None) -> None:
        """Map the arenas in a submission-protocol peer; it answers Hello first (interpreter and PyTorch up)."""
        peer.expect(Hello, 300.0)
        specs = [ArenaSpec(name=a.name, kind=a.kind, size=a.size) for a in arenas.values()]  # type: ignore[arg-type]
        setup = Setup(
            device=self.job.device,
            arenas=specs,
            heap=heap,
            ctrl="ctrl" if self.cuda else None,
            allocator=self.job.allocator if heap else None,
            host_out="host_out",
        )
        peer.send(setup, [a.fd for a in arenas.values()])
        peer.expect(Ready, 300.0)

    def start(self) -> None:
        """Shared memory for the submission process, its set-up, then the file loaded (from here: its fault)."""
        assert self.peer is not None
        torch = self.torch
        if self.cuda:
            from runners.ipc.cuda import Driver

            self.driver = Driver()
            self._new_arena("ctrl", "cuda", 2 * _MIB)
            self._new_arena(self.dev_in, "cuda", 64 * _MIB)
            free, _ = torch.cuda.mem_get_info()
            heap = int(min(self.job.heap_bytes or DEFAULT_HEAP, free // 2))
            self._new_arena("heap", "cuda", heap)
            l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 64 * _MIB)
            self.l2_bytes = l2
            self.flush_buffer = torch.ones(max(2 * l2, 4 * _MIB) // 4, dtype=torch.int32, device="cuda")
        self._new_arena("host_in", "host", _HOST_ARENA)
        self._new_arena("host_out", "host", _HOST_ARENA)
        try:
            self.connect(self.peer, self.arenas, "heap" if self.cuda else None)
        except PeerFailed as exc:
            raise Fatal(
                Verdict.INFRASTRUCTURE_ERROR, f"the submission process did not start: {exc}", "runner"
            ) from None
        for arena in self.arenas.values():
            arena.close_fd()
        self.progress("starting", "the submission process is up")
        self.window = (
            GpuWindow(torch, self.driver, self.arenas, "ctrl", self.flush_buffer)
            if self.cuda
            else CpuWindow(torch, self.arenas)
        )
        self.progress("compiling", self.job.display_name)
        self.peer.send(Load(lang=self.job.lang, path=self.job.submission, display_name=self.job.display_name))
        self.loaded = True  # from here on, whatever the submission process does is the submission's doing
        answer = self.peer.poll((Loaded, LoadFailed), self.remaining())
        if answer is None:
            raise PeerFailed("timeout", "loading the submission did not finish in time")
        if isinstance(answer, LoadFailed):
            raise Fatal(_LOAD_VERDICTS[answer.kind], answer.message, "submission", compile_output=answer.detail)
        self.report.send(RCompiled(output=answer.compile_output))

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def progress(self, phase: str, detail: str = "") -> None:
        self.report.send(RProgress(phase=phase, detail=detail[:500]))

    # ---- inputs and checks ------------------------------------------------------------------------------------
    def generate(self, case: dict[str, Any]) -> Any:
        try:
            return self.generate_input(**case)
        except Exception as exc:
            self._problem_or_memory(exc, f"generate_input({_case(case)})")
            raise  # pragma: no cover - _problem_or_memory raises

    def _problem_or_memory(self, exc: BaseException, what: str) -> None:
        if self.loaded and self._is_oom(exc):
            raise Fatal(
                Verdict.OUT_OF_MEMORY,
                "the GPU ran out of memory while the evaluator prepared or checked a call: the submission holds "
                f"GPU memory outside its allocator ({what}: {str(exc).splitlines()[0][:200]})",
                "submission",
            ) from None
        raise Fatal(Verdict.INFRASTRUCTURE_ERROR, f"the problem's {what} failed:\n{_trace(exc)}", "problem") from None

    def _is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, MemoryError) or "out of memory" in str(exc).lower()

    def place(self, batch: list[Any]) -> list[Placement]:
        """Lay out one call's inputs (or a batch's, one after the other) in the shared input arenas."""
        try:
            return self._place(batch)
        except MemoryError:
            self._grow_inputs(sum(_tensor_bytes(self.torch, d, cuda=True) for d in batch))
            return self._place(batch)
        except ArenaError as exc:
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, f"the problem's generate_input: {exc}", "problem") from None

    def _place(self, batch: list[Any]) -> list[Placement]:
        return [
            place(self.torch, data, self.arenas, cuda=self.dev_in, host="host_in", reset=j == 0)
            for j, data in enumerate(batch)
        ]

    def _grow_inputs(self, need: int) -> None:
        """A larger input arena, shared with the submission process, when a case's inputs do not fit."""
        assert self.peer is not None
        old = self.arenas[self.dev_in]
        if need <= old.size:  # the host arena is full: nothing to grow
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, "the inputs do not fit the host arena", "problem")
        name = f"dev_in{len(self.arenas)}"
        arena = self._new_arena(name, "cuda", max(2 * old.size, int(need * 1.1)))
        self.peer.send(AddArena(arena=ArenaSpec(name=name, kind="cuda", size=arena.size)), [arena.fd])
        arena.close_fd()
        self.peer.expect(Ready, 60.0)
        self.dev_in = name

    def check_output(self, data: Any, output: Any) -> tuple[bool, str]:
        """The problem's check on our private inputs. A check that raises is the submission's fault (a wrong
        answer) only if the same check reads the reference's own output without raising."""
        try:
            return normalise_check(self.check(data, output))
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        try:
            if self.ref_kernel is None:
                raise RuntimeError("the problem has no ref_kernel")
            normalise_check(self.check(data, self.ref_kernel(_clone(self.torch, data))))
        except Exception as exc:
            self._problem_or_memory(exc, "check_implementation (it fails on the reference's own output too)")
        return False, f"the problem's check could not read the output: {error[:500]}"

    def call(self, k: int, batch: list[Placement], *, timed: bool, enqueue_timeout: float) -> Any:
        assert self.window is not None and self.peer is not None
        return self.window.call(self.peer, k, batch, timed=timed, enqueue_timeout=enqueue_timeout,
                                deadline=self.deadline)  # fmt: skip

    def next_k(self) -> int:
        self.k += 1
        return self.k

    def fail_call(self, error: CallError, what: str) -> Fatal:
        return Fatal(_CALL_VERDICTS[error.kind], f"{what}: {error.message}" if error.kind == "bad_output" else
                     error.message, "submission")  # fmt: skip

    # ---- modes -----------------------------------------------------------------------------------------------
    def run_tests(self) -> bool:
        self.progress("testing", f"{len(self.job.tests)} tests")
        all_ok = True
        for i, case in enumerate(self.job.tests):
            t0 = time.perf_counter()
            data = self.generate(case)
            out = self.call(self.next_k(), self.place([data]), timed=False, enqueue_timeout=0.0)
            if out.error is not None:
                f = self.fail_call(out.error, f"test {i + 1}")
                self.report.send(RTest(index=i, verdict=f.verdict, message=f.message, duration_s=_since(t0)))
                raise f
            ok, message = self.check_output(data, out.outputs[0])
            all_ok &= ok
            verdict = Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER
            self.report.send(RTest(index=i, verdict=verdict, message=message, duration_s=_since(t0)))
        return all_ok

    def run_benchmarks(self, fresh: bool) -> None:
        self.progress("calibrating", "the evaluator's clock")
        calibration = self.calibrate()
        for i, case in enumerate(self.job.benchmarks):
            self.progress("benchmarking", f"case {i + 1} of {len(self.job.benchmarks)}")
            self.run_benchmark(i, case, fresh and "seed" in case, calibration)
        self.progress("benchmarking", f"finished {len(self.job.benchmarks)} cases")

    def run_benchmark(self, i: int, case: dict[str, Any], fresh: bool, cal: Calibration) -> None:
        """Warm-up calls, then timed batches: each batch is ``calls`` calls back to back in one trusted window,
        each on inputs of its own (fresh in ranked mode), sized so that what a rewritten reading could hide in one
        window (the calibration's slack) is a small share of the batch (docs/measurement.md)."""
        torch = self.torch
        sol: dict[str, Any] = {}
        if callable(self.speed_of_light):
            try:
                sol = dict(self.speed_of_light(**case))
            except Exception as exc:
                self._problem_or_memory(exc, f"speed_of_light({_case(case)})")
        public = self.generate(case)
        host_times: list[float] = []
        state: dict[str, Any] = {"enqueue_timeout": 0.0, "degraded": 0, "calls": 1, "made": 0, "per_call": []}
        footprint = {"bytes": _tensor_bytes(torch, public, cuda=self.cuda)}

        def warm(n: int) -> float:
            t0 = time.perf_counter()
            out = self.call(self.next_k(), self.place([public]), timed=False, enqueue_timeout=0.0)
            if out.error is not None:
                raise self.fail_call(out.error, f"benchmark {i + 1}, warm-up call {n + 1}")
            host_times.append(time.perf_counter() - t0)
            if n == 0:
                footprint["bytes"] += _tensor_bytes(torch, out.outputs[0], cuda=self.cuda)
                ok, message = self.check_output(self.generate(case), out.outputs[0])
                if not ok:
                    raise Fatal(Verdict.WRONG_ANSWER, f"benchmark {i + 1}: {message}", "submission")
            return host_times[-1]

        def timed(n: int) -> Sample:
            if n == 0:
                recent = sorted(host_times[1:] or host_times)
                state["enqueue_timeout"] = min(max(4 * recent[int(0.9 * (len(recent) - 1))], 0.01), 2.0)
            calls = state["calls"]
            if fresh:
                seeds = [derive_seed(self.secret, i, state["made"] + j) for j in range(calls)]
                batch = [self.generate({**case, "seed": seed}) for seed in seeds]
            else:
                batch = [public] * calls
            state["made"] += calls
            k = self.next_k()
            out = self.call(k, self.place(batch), timed=True, enqueue_timeout=state["enqueue_timeout"])
            if out.error is not None:
                raise self.fail_call(out.error, f"benchmark {i + 1}, timed call {state['made']}")
            for j, output in enumerate(out.outputs if fresh or n == 0 else ()):
                ok, message = self.check_output(batch[j] if fresh else self.generate(case), output)
                if not ok:
                    where = f"benchmark {i + 1}, timed call {state['made'] - calls + j + 1}"
                    raise Fatal(Verdict.WRONG_ANSWER, f"{where}: {message}", "submission")
                if not fresh:
                    break
            assert self.window is not None and self.peer is not None
            reading = out.reading_ns if out.reading_ns is not None else self.window.reading(self.peer, k, 30.0)
            state["degraded"] += out.degraded
            if n == 2 and state["degraded"] == 3:
                state["enqueue_timeout"] = 0.0  # it synchronises every time: stop waiting for it to queue first
            sample = sample_of(reading, out.window_ns, cal.overhead_ns, cal.event_ns, out.allowance_ns,
                               out.degraded, calls)  # fmt: skip
            state["calls"] = self._batch_size(sample, out, calls, cal, footprint["bytes"])
            return sample

        try:
            timing = time_case(warm, timed, self.settings, time.perf_counter)
        except Fatal as f:
            self.report.send(RBench(index=i, verdict=f.verdict, message=f.message))
            raise
        samples = timing.samples
        bounded = sum(s.bounded for s in samples)
        degraded = sum(s.degraded for s in samples)
        notes = []
        if degraded:
            notes.append(
                f"custom_kernel waited for the GPU inside {degraded} of {len(samples)} timed batches; the host's "
                "time was counted in those"
            )
        if bounded > len(samples) // 4:
            notes.append(
                f"in {bounded} of {len(samples)} timed batches the evaluator's clock allowed less than the "
                "submission process's own timing said; those count the evaluator's time"
            )
        windows = sorted(s.window_ns for s in samples)
        calls = sorted(s.calls for s in samples)
        trust = Trust(
            overhead_ns=cal.overhead_ns,
            bounded_calls=bounded,
            degraded_calls=degraded,
            window_median_ns=windows[len(windows) // 2],
            calls_per_sample=calls[len(calls) // 2],
        )
        self.report.send(
            RBench(
                index=i,
                verdict=Verdict.ACCEPTED,
                message="; ".join(notes),
                samples_ns=timing.samples_ns,
                bytes_moved=_int_or_none(sol.get("bytes")),
                flops=_int_or_none(sol.get("flops")),
                trust=trust,
            )
        )
        if self.cuda:
            torch.cuda.empty_cache()

    def _batch_size(self, sample: Sample, out: Any, calls: int, cal: Calibration, footprint: int) -> int:
        """Calls in the next batch: enough work per window that the calibration's slack is at most
        ``1 / SLACK_SHARE`` of it, as far as the inputs of the whole batch and their outputs fit in half the L2
        (so that no call pays to write back an earlier call's output, as none does under Nsight Compute)."""
        per_call = max((out.window_ns - cal.overhead_ns - out.allowance_ns) / calls, 100.0)  # the trusted clock's
        want = math.ceil(SLACK_SHARE * cal.slack_ns / per_call)
        room = MAX_BATCH_CALLS if not self.cuda else max(1, self.l2_bytes // 2 // max(footprint, 1))
        return max(1, min(want, room, MAX_BATCH_CALLS, self.job.max_batch_calls))

    def run_profile(self) -> None:
        assert self.peer is not None
        self.progress("profiling", self.job.profiler)
        texts = []
        for i, case in enumerate(self.job.benchmarks):
            data = self.generate(case)
            (placement,) = self.place([data])
            for dst, src in placement.copies:
                dst.copy_(src)
            if self.cuda:
                self.torch.cuda.synchronize()
            k = self.next_k()
            label = f"benchmark {i + 1} {_case(case)}"
            self.peer.send(Profile(k=k, data=placement.value, label=label, nvtx=self.job.profiler == "ncu"))
            answer = self.peer.expect(ProfileText, self.remaining(), k)
            if answer.error is not None:
                raise self.fail_call(answer.error, label)
            if answer.text:
                texts.append(answer.text)
        if texts:
            if self.cuda:
                texts.insert(0, "Nsight Compute (ncu) is not available on this runner; the torch profiler's table:")
            self.report.send(RProfile(text="\n\n".join(texts)[-60_000:]))

    # ---- calibration: the evaluator's own echo process -------------------------------------------------------
    def start_echo(self) -> None:
        """Start the echo (the submission program running a known kernel), while the submission process loads."""
        a, b = socket_pair()
        echo_dir = self.workdir / "echo"
        echo_dir.mkdir(exist_ok=True)
        env = {**os.environ, SOCKET_FD_ENV: str(b.fileno())}
        proc = subprocess.Popen(
            [sys.executable, "-m", "runners.submission"], pass_fds=(b.fileno(),), env=env, cwd=echo_dir
        )
        b.close()
        from runners.ipc.protocol import FROM_SUBMISSION

        self.echo = (proc, Peer(Wire(a, FROM_SUBMISSION), "the calibration echo"))

    def calibrate(self) -> Calibration:
        torch = self.torch
        proc, peer = self.echo
        arenas: dict[str, Arena] = {}
        try:
            if self.cuda:
                for name, size in (("ctrl", 2 * _MIB), ("dev_in", 2 * _MIB), ("heap", 64 * _MIB)):
                    arenas[name] = Arena.create(torch, name, "cuda", size, self.driver)
            for name in ("host_in", "host_out"):
                arenas[name] = Arena.create(torch, name, "host", 16 * _MIB)
            self.connect(peer, arenas, "heap" if self.cuda else None)
            for arena in arenas.values():
                arena.close_fd()
            peer.send(Load(lang=CALIBRATION, path="", display_name="calibration"))
            peer.expect(Loaded, 60.0)
            window: Window = (
                GpuWindow(torch, self.driver, arenas, "ctrl", self.flush_buffer)
                if self.cuda
                else CpuWindow(torch, arenas)
            )
            return calibrate(torch, window, peer, arenas, time.monotonic() + 120.0)
        except (PeerFailed, RuntimeError) as exc:
            message = f"calibrating the evaluator's clock failed: {exc}"
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "runner") from None
        finally:
            with contextlib.suppress(Exception):
                peer.send(Quit())
            peer.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()
            self.echo = None

    # ---- the whole job ----------------------------------------------------------------------------------------
    def run(self) -> None:
        job = self.job
        self.secret: int | str = job.secret if job.secret is not None else secrets.token_hex(16)
        if job.mode in ("benchmark", "ranked"):
            self.start_echo()  # first: its interpreter and PyTorch start while ours do
        self.setup()
        if job.mode == "reference":
            self.run_reference_check()
            return
        self.start()
        if job.mode in ("test", "ranked", "profile") and not self.run_tests():
            return
        if job.mode == "benchmark":
            self.run_benchmarks(fresh=False)
        elif job.mode == "ranked":
            self.run_benchmarks(fresh=True)
        elif job.mode == "profile":
            self.run_profile()

    def run_reference_check(self) -> None:
        """``kernelcup problems validate --run``: the reference must pass its own check on a test case."""
        for i, case in enumerate(self.job.tests[:1]):
            t0 = time.perf_counter()
            data = self.generate(case)
            if self.ref_kernel is None:
                raise Fatal(Verdict.INFRASTRUCTURE_ERROR, "the problem's reference.py has no ref_kernel", "problem")
            try:
                output = self.ref_kernel(_clone(self.torch, data))
                ok, message = normalise_check(self.check(data, output))
            except Exception as exc:
                raise Fatal(
                    Verdict.INFRASTRUCTURE_ERROR,
                    f"the reference failed on test {i + 1} ({_case(case)}):\n{_trace(exc)}",
                    "problem",
                ) from None
            verdict = Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER
            self.report.send(RTest(index=i, verdict=verdict, message=message, duration_s=_since(t0)))

    def shutdown(self) -> None:
        if self.peer is not None:
            with contextlib.suppress(Exception):
                self.peer.send(Quit())
        if self.echo is not None:
            proc, _ = self.echo
            proc.kill()


def _since(t0: float) -> float:
    return time.perf_counter() - t0


def _case(case: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in case.items())[:200]


def _int_or_none(v: object) -> int | None:
    try:
        return int(v) if v is not None else None  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def _clone(torch: Any, data: Any) -> Any:
    if isinstance(data, torch.Tensor):
        return data.clone()
    if isinstance(data, tuple | list):
        return type(data)(_clone(torch, x) for x in data)
    if isinstance(data, dict):
        return {k: _clone(torch, v) for k, v in data.items()}
    return data


def _tensor_bytes(torch: Any, data: Any, cuda: bool) -> int:
    if isinstance(data, torch.Tensor):
        return -(-data.numel() * data.element_size() // 512) * 512 + 512 if data.is_cuda == cuda else 0
    if isinstance(data, tuple | list):
        return sum(_tensor_bytes(torch, x, cuda) for x in data)
    if isinstance(data, dict):
        return sum(_tensor_bytes(torch, x, cuda) for x in data.values())
    return 0


def main() -> int:
    report = Reporter(int(os.environ.pop(REPORT_FD_ENV)))
    job_fd = int(os.environ.pop(JOB_FD_ENV))
    with os.fdopen(job_fd, "rb") as f:
        job = Job.model_validate_json(f.readline())
    sub_fd = os.environ.pop(SOCKET_FD_ENV, None)
    peer = Peer.from_fd(int(sub_fd)) if sub_fd is not None else None
    evaluator = Evaluator(job, report, peer, Path.cwd())
    try:
        evaluator.run()
    except Fatal as f:
        report.send(RFatal(verdict=f.verdict, message=f.message[-60_000:], fault=f.fault,  # type: ignore[arg-type]
                           compile_output=f.compile_output[-60_000:]))  # fmt: skip
    except PeerFailed as exc:
        report.send(_peer_failure(exc, evaluator))
    except BaseException as exc:
        if evaluator.loaded and evaluator._is_oom(exc):
            report.send(RFatal(verdict=Verdict.OUT_OF_MEMORY, fault="submission", message=(
                "the GPU ran out of memory while the evaluator prepared or checked a call: the submission holds "
                f"GPU memory outside its allocator ({str(exc).splitlines()[0][:200]})")))  # fmt: skip
        else:
            report.send(RFatal(verdict=Verdict.INFRASTRUCTURE_ERROR, fault="runner",
                               message=f"the evaluator failed: {_trace(exc)}"))  # fmt: skip
    finally:
        evaluator.shutdown()
    report.send(RDone())
    return 0


def _peer_failure(exc: PeerFailed, evaluator: Evaluator) -> RFatal:
    if not evaluator.loaded:
        return RFatal(verdict=Verdict.INFRASTRUCTURE_ERROR, fault="runner",
                      message=f"the submission process failed before the submission was loaded: {exc}")  # fmt: skip
    if exc.kind == "timeout":
        return RFatal(verdict=Verdict.TIMEOUT, fault="submission", message=str(exc))
    if exc.kind == "gone":
        return RFatal(verdict=Verdict.RUNTIME_ERROR, fault="submission", message="the submission process exited")
    return RFatal(verdict=Verdict.REJECTED, fault="submission", message=str(exc))
