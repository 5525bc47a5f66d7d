"""The trusted evaluator: generates every input, checks every output, keeps the clock, never runs user code.

Started by ``runners.entry`` in a sandbox of its own as ``python -m runners.oracle``. It reads the job (with the
ranked secret, which never leaves this process) from a pipe only the entry writes, imports the problem's reference
(the only process that does), and drives the submission process over a Unix socket: it places each call's inputs
in shared memory, opens a window on its own clock around the call (``window``), snapshots the output where the
window closes and checks it against the reference on its own private copy of the inputs. It reports raw facts
(per-test verdicts, per-call samples) to the entry, which computes statistics and the verdict. Its timing (the
echo calibration, the timed batches, profile mode) is in ``benchmark``; what its parts share is in ``base``.

Whose fault a failure is (``RFatal.fault``): before the submission process is told to load the file, anything
that goes wrong is the runner's (the process did not start, the sandbox or the interpreter is broken); a failure
in the problem's own code (import, ``generate_input``, a check that cannot read even the reference's output) is
the problem's; after the load, everything the submission process does or fails to do is the submission's.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from runners.contract import TimingSettings, Verdict
from runners.ipc.arena import Arena, ArenaError, Placement, check_inputs, place
from runners.ipc.protocol import (
    SUBMISSION_EXITED,
    AddArena,
    ArenaSpec,
    CallError,
    Hello,
    Job,
    Load,
    Loaded,
    LoadFailed,
    Quit,
    RCalibration,
    RCompiled,
    RDone,
    Ready,
    RFatal,
    RHello,
    RProgress,
    RTest,
    RTestReference,
    Setup,
)
from runners.ipc.wiring import SOCKET_FD_ENV
from runners.oracle.base import (
    DEFAULT_HEAP,
    HELPER_THREADS_ENV,
    JOB_FD_ENV,
    MAX_DERIVED_SEED,
    MIB,
    PRESTART_ENV,
    PROBLEM_DIR,
    REPORT_FD_ENV,
    Fatal,
    Reporter,
    case_text,
    clone,
    since,
    tensor_bytes,
    trace,
)
from runners.oracle.benchmark import Benchmarking
from runners.oracle.checking import (
    ProblemError,
    clean_message,
    input_sample,
    nan_like,
    normalise_check,
    same_value,
    speed_of_light_of,
)
from runners.oracle.helpers import Helper, start_helpers
from runners.oracle.peer import Peer, PeerFailed
from runners.oracle.window import Calibration, CpuWindow, GpuWindow, Window

_HOST_ARENA = 8 * 1024 * MIB  # sparse: only what is written takes memory

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


_OOM_WORDS = ("out of memory", "alloc_failed", "cublas_status_not_initialized", "cudnn_status_not_initialized",
              "cusolver_status_not_initialized", "cusparse_status_not_initialized", "cufft_setup_failed")
"""What a CUDA library's failure to get memory reads like (lowercased). NOT_INITIALIZED is how cuBLAS (and the
others) report a handle that could not allocate its resources; once the submission is loaded, on a GPU, that is
taken as its doing, as an out-of-memory is (``_problem_or_memory``)."""


class Evaluator(Benchmarking):
    def __init__(
        self,
        job: Job,
        report: Reporter,
        peer: Peer | None,
        workdir: Path,
        spares: dict[str, Helper] | None = None,
    ) -> None:
        self.job = job
        self.spares = dict(spares or {})
        """Helpers pre-started before the job arrived (``prestart_helpers``), by name; each used at most once."""
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
        self.baseline_process: Any = None
        self.baseline_echo: Any = None
        self.calibration: Calibration | None = None
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
        # The reference imports what travels beside it: the problem's own modules and the bundled ``_lib``.
        sys.path.insert(0, str(problem))
        try:
            from runners.submission.languages import import_file

            self.reference = import_file(problem / "reference.py", "reference")
            self.generate_input = self.reference.generate_input
            self.check = self.reference.check_implementation
        except BaseException as exc:
            raise Fatal(
                Verdict.INFRASTRUCTURE_ERROR, f"the problem's reference.py failed to import:\n{trace(exc)}", "problem"
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
        """The clock's calibration and the baselines (no user code runs yet), then shared memory for the submission
        process and its set-up, then the file loaded (from here: its fault)."""
        assert self.peer is not None
        torch = self.torch
        if self.cuda:
            from runners.ipc.cuda import Driver

            self.driver = Driver()
            l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 64 * MIB)
            self.l2_bytes = l2
            self.flush_buffer = torch.ones(max(2 * l2, 4 * MIB) // 4, dtype=torch.int32, device="cuda")
        if self.reuses_calibration():
            # An earlier run's, on this GPU, seconds ago, taken as ours would be (before its file loaded): the runner
            # hands it over only within KERNELCUP_CALIBRATION_REUSE_S (docs/measurement.md, "Pre-started processes").
            given = self.job.calibration
            assert given is not None
            age = f"taken {self.job.calibration_age_s:.1f} s ago by an earlier run on this GPU"
            self.progress("calibrating", f"the evaluator's clock: reused, {age}")
            self.calibration = Calibration(overhead_ns=given.overhead_ns, event_ns=given.event_ns,
                                           slack_ns=given.slack_ns, detail=f"reused ({age})",
                                           typical_ns=given.typical_ns, min_call_ns=given.min_call_ns)  # fmt: skip
        elif self.echo is not None and self.cuda:
            # On a GPU before the file loads: no user code runs while the clock is calibrated (it could keep the GPU
            # busy or take its memory, inflating the overhead or turning its failure into ours). On the CPU after the
            # tests, warm: cold, the echo read overheads far above the submission's (timing.cap_overhead caps both).
            self.progress("calibrating", "the evaluator's clock")
            self.calibration = cal = self.calibrate()
            self.report.send(RCalibration(overhead_ns=cal.overhead_ns, event_ns=cal.event_ns, slack_ns=cal.slack_ns,
                                          typical_ns=cal.typical_ns, min_call_ns=cal.min_call_ns))  # fmt: skip
        if self.baseline_process is not None:
            # Also before the load (the baselines share the GPU with no user code), and before the submission's heap
            # is carved out of the free memory: the baseline process's heap and our own checks of the largest cases
            # then have the GPU's memory that the submission will have (on the H100, with both heaps at once, our
            # check of vectoradd's largest case ran out of memory and that baseline case went untimed).
            self.time_baselines_calibrated()
        if self.cuda:
            self._new_arena("ctrl", "cuda", 2 * MIB)
            self._new_arena(self.dev_in, "cuda", 64 * MIB)
            free, _ = torch.cuda.mem_get_info()
            heap = int(min(self.job.heap_bytes or DEFAULT_HEAP, free // 2))
            self._new_arena("heap", "cuda", heap)
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
        self.before_load()
        self.progress("compiling", self.job.display_name)
        self.peer.send(Load(lang=self.job.lang, path=self.job.submission, display_name=self.job.display_name))
        self.loaded = True  # from here on, whatever the submission process does is the submission's doing
        answer = self.peer.poll((Loaded, LoadFailed), self.remaining())
        if answer is None:
            raise PeerFailed("timeout", "loading the submission did not finish in time")
        if isinstance(answer, LoadFailed):
            raise Fatal(_LOAD_VERDICTS[answer.kind], answer.message, "submission", compile_output=answer.detail)
        self.report.send(RCompiled(output=answer.compile_output))

    def before_load(self) -> None:
        """Just before the submission's file is loaded (the last moment no user code runs): nothing on one GPU."""

    def reuses_calibration(self) -> bool:
        """A GPU run handed an earlier run's calibration (a CPU's is always taken afresh, after the tests)."""
        return self.job.calibration is not None and self.job.device == "cuda" and self.job.world_size == 1

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def progress(self, phase: str, detail: str = "") -> None:
        self.report.send(RProgress(phase=phase, detail=detail[:500]))

    # ---- inputs and checks ------------------------------------------------------------------------------------
    def generate(self, case: dict[str, Any]) -> Any:
        return self._problem_code(lambda: self.generate_input(**case), f"generate_input({case_text(case)})")

    def _problem_or_memory(self, exc: BaseException, what: str) -> None:
        """A failure in the problem's own code: the problem's fault, except the GPU's memory running out once the
        submission is loaded (it may hold GPU memory outside its allocator). Host memory is not the submission's
        to take: its process has a limit of its own."""
        if self.loaded and self.cuda and self._is_oom(exc):
            raise Fatal(
                Verdict.OUT_OF_MEMORY,
                "the GPU ran out of memory while the evaluator prepared or checked a call: the submission holds "
                f"GPU memory outside its allocator ({what}: {str(exc).splitlines()[0][:200]})",
                "submission",
            ) from None
        detail = str(exc) if isinstance(exc, ProblemError) else trace(exc)  # (ours: what is wrong, no traceback)
        raise Fatal(Verdict.INFRASTRUCTURE_ERROR, f"the problem's {what} failed:\n{detail}", "problem") from None

    def _is_oom(self, exc: BaseException) -> bool:
        """Out of memory, in the words of PyTorch and of the CUDA libraries the problem's code may call: a library
        that cannot allocate its handle or workspace (cuBLAS, cuDNN, cuFFT, cuSPARSE, cuSOLVER) says so in its
        status name (red team, 2026-11-25: cuBLAS's first handle failed NOT_INITIALIZED once the submission held
        every byte of the GPU, and the problem was blamed)."""
        text = str(exc).lower()
        return isinstance(exc, MemoryError) or any(words in text for words in _OOM_WORDS)

    def place(self, batch: list[Any]) -> list[Placement]:
        """Lay out one call's inputs (or a batch's, one after the other) in the shared input arenas."""
        try:
            return self._place(batch)
        except MemoryError:
            self._grow_inputs(sum(tensor_bytes(self.torch, d, cuda=True) for d in batch))
            return self._place(batch)
        except (ArenaError, ValueError) as exc:  # (a pydantic ValidationError is a ValueError: too long a list...)
            message = f"the problem's generate_input made inputs that cannot be passed to custom_kernel: {exc}"
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, clean_message(message), "problem") from None

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
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
        try:
            if self.ref_kernel is None:
                raise RuntimeError("the problem has no ref_kernel")
            normalise_check(self.check(data, self.ref_kernel(clone(self.torch, data))))
        except BaseException as exc:
            self._problem_or_memory(exc, "check_implementation (it fails on the reference's own output too)")
        return False, f"the problem's check could not read the output: {clean_message(error, 500)}"

    def call(self, k: int, batch: list[Placement], *, timed: bool, enqueue_timeout: float) -> Any:
        assert self.window is not None and self.peer is not None
        return self.window.call(self.peer, k, batch, timed=timed, enqueue_timeout=enqueue_timeout,
                                deadline=self.deadline)  # fmt: skip

    def next_k(self) -> int:
        self.k += 1
        return self.k

    def fail_call(self, error: CallError, what: str) -> Fatal:
        """The submission's failed call. Its message is the submission's text (up to the protocol's 64 KiB): cut and
        cleaned, so that a report naming it never outgrows its own limit or carries terminal controls."""
        message = f"{what}: {error.message}" if error.kind == "bad_output" else error.message
        return Fatal(_CALL_VERDICTS[error.kind], clean_message(message, 4000), "submission")

    # ---- modes -----------------------------------------------------------------------------------------------
    def run_tests(self) -> bool:
        self.progress("testing", f"{len(self.job.tests)} tests")
        all_ok = True
        for i, case in enumerate(self.job.tests):
            t0 = time.perf_counter()
            data = self.generate(case)
            if self.job.world_size == 1 and self.ref_kernel is not None:  # (a rank's reference may need its peers)
                self.report.send(RTestReference(index=i, seconds=self._reference_seconds(data, i)))
            out = self.call(self.next_k(), self.place([data]), timed=False, enqueue_timeout=0.0)
            if out.error is not None:
                f = self.fail_call(out.error, f"test {i + 1}")
                self.report.send(RTest(index=i, verdict=f.verdict, message=f.message, duration_s=since(t0)))
                raise f
            ok, message = self.check_output(data, out.outputs[0])
            all_ok &= ok
            verdict = Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER
            self.report.send(RTest(index=i, verdict=verdict, message=message, duration_s=since(t0)))
        return all_ok

    def _reference_seconds(self, data: Any, i: int) -> float:
        """The reference's own time on a test's inputs (a copy of them), on our clock: the entry bounds the test by
        it (``runners.entry.clock``)."""
        assert self.ref_kernel is not None
        t0 = time.perf_counter()
        self._problem_code(lambda: self.ref_kernel(clone(self.torch, data)), f"ref_kernel on test {i + 1}")  # type: ignore[misc]
        if self.cuda:
            self.torch.cuda.synchronize()
        return time.perf_counter() - t0

    # ---- the whole job ----------------------------------------------------------------------------------------
    def run(self) -> None:
        job = self.job
        self.secret: int | str = job.secret if job.secret is not None else secrets.token_hex(16)
        if job.mode in ("benchmark", "ranked"):
            # First: their interpreters and PyTorch start while ours do.
            wanted = [] if self.reuses_calibration() else ["echo"]
            if job.baselines and job.benchmarks:
                wanted.append("baseline")
                if job.device == "cpu":  # the CPU's calibration for the submission stays after its tests (warm)
                    wanted.append("echo-baselines")
            helpers = self._start_helpers(wanted)
            self.echo = helpers.get("echo")
            self.baseline_process = helpers.get("baseline")
            self.baseline_echo = helpers.get("echo-baselines")
        self._drop_spares()  # pre-started helpers this job has no use for
        self.setup()
        if job.mode == "reference":
            self.run_reference_check()
            return
        self.start()
        if job.mode in ("test", "ranked", "profile") and not self.run_tests():
            return
        if job.mode == "benchmark":  # timed on fresh inputs where every case has a seed to make them from
            self.run_benchmarks(fresh=all("seed" in case for case in job.benchmarks))
        elif job.mode == "ranked":
            self.run_benchmarks(fresh=True)
        elif job.mode == "profile":
            self.run_profile()

    def run_reference_check(self) -> None:
        """``kernelcup problems validate --run`` (and a sync's check): what every later run relies on, tried where
        no submission runs, so that a broken problem is refused here instead of failing (or blaming) submissions.
        Every test case: its inputs twice (they must be the same: the harness regenerates inputs to check
        outputs), inputs that can be passed to a submission, the reference passing the check. The check must
        refuse an output of None (a check that does not look at the output passes everything). Each baseline
        passes the check. Each benchmark case: its inputs, and its ``speed_of_light`` (whole numbers)."""
        if self.ref_kernel is None:
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, "the problem's reference.py has no ref_kernel", "problem")
        for i, case in enumerate(self.job.tests):
            t0 = time.perf_counter()
            where = f"test {i + 1} ({case_text(case)})"
            data = self.generate(case)
            self._same_inputs(data, self.generate(case), where)
            self._passable(data, where)
            out = self._problem_code(lambda d=data: self.ref_kernel(clone(self.torch, d)),  # type: ignore[misc]
                                     f"ref_kernel on {where}")  # fmt: skip
            ok, message = self._problem_code(lambda d=data, o=out: normalise_check(self.check(d, o)),
                                             f"check_implementation on {where}")  # fmt: skip
            if i == 0:
                self._check_refuses_no_work(data, out, where)
            verdict = Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER
            self.report.send(RTest(index=i, verdict=verdict, message=message, duration_s=since(t0)))
        # Each baseline the problem names: a function of reference.py that passes the same check.
        for label, function in self.job.baselines:
            fn = getattr(self.reference, function, None)
            if not callable(fn):
                message = f"the baseline {label!r} names {function}, which reference.py does not define"
                raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "problem")
            data = self.generate(self.job.tests[0]) if self.job.tests else None
            if data is None:
                continue
            try:
                ok, message = normalise_check(self.check(data, fn(clone(self.torch, data))))
            except BaseException as exc:
                ok, message = False, trace(exc)
            if not ok:
                message = f"the baseline {label!r} ({function}) fails the problem's check on test 1: {message}"
                raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "problem")
        # Each benchmark case's inputs once (made, then dropped) and its speed of light, so a case that cannot be
        # generated (absurd sizes) or declares nonsense work is the problem's fault here, not in every timed run.
        for i, case in enumerate(self.job.benchmarks):
            try:
                public = self.generate(case)
                self._passable(public, f"benchmark {i + 1}")
                if "seed" in case:
                    self._seed_makes_the_inputs(case, input_sample(self.torch, public))
                del public
                if callable(self.speed_of_light):
                    self._problem_code(lambda c=case: speed_of_light_of(self.speed_of_light, c),
                                       f"speed_of_light({case_text(case)})")  # fmt: skip
            except Fatal as f:
                raise Fatal(f.verdict, f"benchmark {i + 1}: {f.message}", f.fault) from None

    def _check_refuses_no_work(self, data: Any, out: Any, where: str) -> None:
        """The check must refuse an output of None (a check that does not look at the output passes everything)
        and the reference's output filled with NaN (``not (abs(out - expected) > tol).any()`` is True for NaN: a
        kernel that computed nothing would pass; red team, 2026-11-25)."""
        if self._problem_code(lambda: normalise_check(self._check_output(data, None)),
                              f"check_implementation of None on {where}")[0]:  # fmt: skip
            message = (f"check_implementation accepts None as the output of {where}: it does not look at the "
                       "output, so every submission would pass")  # fmt: skip
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "problem")
        nans, floating = nan_like(self.torch, out)
        if floating and self._problem_code(lambda: normalise_check(self._check_output(data, nans)),
                                           f"check_implementation of NaNs on {where}")[0]:  # fmt: skip
            message = (f"check_implementation accepts NaN in every element of the output of {where}: a comparison "
                       "like `not (abs(out - expected) > tol).any()` holds for NaN, so a kernel that computed nothing "
                       "would pass; test `(abs(out - expected) <= tol).all()` (or torch.allclose) instead")  # fmt: skip
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "problem")

    def _check_output(self, data: Any, output: Any) -> object:
        try:
            return self.check(data, output)
        except Exception:
            return False  # refusing an output by raising is refusing it

    def _problem_code(self, fn: Any, what: str) -> Any:
        """``fn()``, the problem's own code: anything it raises (SystemExit too) is the problem's fault."""
        try:
            return fn()
        except BaseException as exc:
            self._problem_or_memory(exc, what)
            raise  # pragma: no cover - _problem_or_memory raises

    def _seed_makes_the_inputs(self, case: dict[str, Any], public: Any, make: Any = None) -> None:
        """Timed calls get inputs made from seeds of their own, up to ``MAX_DERIVED_SEED``: the generator must take
        such a seed (an int32 tensor of it, ``np.random.seed``), and its inputs must change with the seed (one that
        ignores it gives every timed call of a ranked run the same input, which a submission could answer from a
        cache). Both failed only in ranked runs, after validation (red team, 2026-11-25). ``public``: an
        :func:`input_sample` of the case's inputs as ``make`` (default ``generate``) made them from its own seed."""
        for seed in (MAX_DERIVED_SEED, MAX_DERIVED_SEED // 3):  # a second seed only where the first one's inputs
            try:  # were the same (a generator of short period may repeat itself once)
                fresh = (make or self.generate)({**case, "seed": seed})
            except Fatal as f:
                raise Fatal(f.verdict, f"with seed {seed} (timed calls get seeds from 0 to 2**31 - 1, made from a "
                            f"secret): {f.message}", f.fault) from None  # fmt: skip
            if not same_value(self.torch, public, input_sample(self.torch, fresh)):
                return
        raise Fatal(Verdict.INFRASTRUCTURE_ERROR, f"generate_input gives the same inputs for seeds {case['seed']}, "
                    f"{MAX_DERIVED_SEED} and {MAX_DERIVED_SEED // 3}: it ignores its seed, so every timed call of a "
                    "ranked run would get one input, which a submission could answer from a cache; make the inputs "
                    "from the seed", "problem")  # fmt: skip

    def _same_inputs(self, a: Any, b: Any, where: str) -> None:
        if not same_value(self.torch, a, b):
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, f"generate_input gives different inputs for the same case "
                        f"({where}): it must depend on its seed alone, since the harness regenerates the inputs to "
                        "check each output", "problem")  # fmt: skip

    def _passable(self, data: Any, where: str) -> None:
        try:
            check_inputs(self.torch, data)
        except (ArenaError, ValueError) as exc:
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, clean_message(f"the inputs of {where} cannot be passed to "
                        f"custom_kernel: {exc}"), "problem") from None  # fmt: skip

    def shutdown(self) -> None:
        if self.peer is not None:
            with contextlib.suppress(Exception):
                self.peer.send(Quit())
        for helper in (self.echo, self.baseline_process, self.baseline_echo):
            if helper is not None:
                helper[0].kill()
        self._drop_spares()

    def _drop_spares(self) -> None:
        for proc, peer in self.spares.values():
            proc.kill()
            peer.close()
        self.spares.clear()


def prestart_helpers(workdir: Path, names: list[str]) -> dict[str, Helper]:
    """The helpers a pre-started evaluator starts before its job arrives (they import PyTorch and wait): only names
    the evaluator itself knows, whatever the runner asked for; on the CPU (where the entry set the helpers' threads)
    forked from one zygote."""
    return start_helpers(workdir, names, fork=HELPER_THREADS_ENV in os.environ)


def read_job() -> tuple[Job | None, str | None, Peer | None, dict[str, Helper]]:
    """The job from the entry's pipe (None: a pre-started set let go unused), the report pipe's descriptor (none for
    an evaluator of rank 1 and up: rank 0 reports), the submission process's socket, each taken out of the
    environment, and a pre-started evaluator's helpers."""
    report_fd = os.environ.pop(REPORT_FD_ENV, None)
    job_fd = int(os.environ.pop(JOB_FD_ENV))
    prestarted = os.environ.pop(PRESTART_ENV, None)
    spares = {}
    if prestarted is not None:
        # Pre-started (docs/measurement.md, "Pre-started processes"): the helpers and PyTorch now, while no job
        # exists; nothing of a job (the secret among it) reaches this process before the line below returns.
        spares = prestart_helpers(Path.cwd(), [n for n in prestarted.split(",") if n])
        import torch  # noqa: F401  (what the wait is for: no CUDA context yet, that waits for the job)
    with os.fdopen(job_fd, "rb") as f:
        line = f.readline()
    if not line.strip():  # let go without a job (a pre-started set that was not used)
        for proc, _ in spares.values():
            proc.kill()
        return None, report_fd, None, {}
    job = Job.model_validate_json(line)
    sub_fd = os.environ.pop(SOCKET_FD_ENV, None)
    return job, report_fd, Peer.from_fd(int(sub_fd)) if sub_fd is not None else None, spares


def run_one(
    job: Job,
    report_fd: str | None,
    peer: Peer | None,
    spares: dict[str, Helper] | None = None,
) -> int:
    """The evaluator of a one-GPU run (``runners.oracle.__main__`` sends a run of several ranks to ``ranks``)."""
    report = Reporter(int(report_fd or -1))
    evaluate(Evaluator(job, report, peer, Path.cwd(), spares or {}), report)
    return 0


def evaluate(evaluator: Evaluator, report: Reporter, finish: Any = None) -> None:
    """Run the job and report how it ended, then ``done`` (``finish``: called after a run that raised nothing)."""
    try:
        evaluator.run()
        if finish is not None:
            finish()
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
                               message=f"the evaluator failed: {trace(exc)}"))  # fmt: skip
    finally:
        evaluator.shutdown()
    report.send(RDone())


def _peer_failure(exc: PeerFailed, evaluator: Evaluator) -> RFatal:
    if not evaluator.loaded:
        return RFatal(verdict=Verdict.INFRASTRUCTURE_ERROR, fault="runner",
                      message=f"the submission process failed before the submission was loaded: {exc}")  # fmt: skip
    if exc.kind == "timeout":
        return RFatal(verdict=Verdict.TIMEOUT, fault="submission", message=str(exc))
    if exc.kind == "gone":
        return RFatal(verdict=Verdict.RUNTIME_ERROR, fault="submission", message=SUBMISSION_EXITED)
    return RFatal(verdict=Verdict.REJECTED, fault="submission", message=str(exc))
