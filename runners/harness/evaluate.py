"""The evaluation process: import the reference, then the submission; run tests, time benchmarks, report.

Started only by ``runners.entry`` (in the sandbox) as ``python -m runners.harness``. It receives the job
and the channel key on the control pipe, and reports raw facts on the authenticated result channel
(``channel``). Order matters for trust: the reference, PyTorch and the harness's own modules are
imported and their identities recorded (``integrity.Snapshot``) *before* the submission's code runs;
every output is checked against a reference computed on inputs regenerated after the call (so
neither mutating the inputs nor reading a precomputed expected output helps); in ranked mode every
timed call gets fresh inputs from a seed the parent derives from the secret just in time.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runners.contract import TimingSettings, Verdict
from runners.harness import integrity, languages, timing
from runners.harness.channel import CONTROL_FD_ENV, RESULT_FD_ENV, ChildChannel, read_control_header
from runners.harness.checking import normalise_check

NVTX_RANGE = "kernelcup_profile"
_NEEDS_CUDA = re.compile(
    r"not compiled with cuda|no cuda gpus|nvidia driver|cuda driver|cuda.{0,40}not available|cuda_home|nvcc"
    r"|cannot access accelerator|libcuda|cuda error|cudagetdevice|invalid device|device type cuda"
)
_TRACE_CHARS = 4000


class Fatal(Exception):
    """Stops the evaluation with a verdict; the parent shows the message."""

    def __init__(self, verdict: Verdict, message: str, compile_output: str = "") -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message
        self.compile_output = compile_output


def _trace(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    here = str(Path(__file__).resolve().parent)
    kept = [f for f in frames if not f.filename.startswith(here)]
    lines = traceback.format_list(kept) + traceback.format_exception_only(type(exc), exc)
    text = "".join(lines)
    return text[-_TRACE_CHARS:]


def classify(exc: BaseException, device: str, what: str) -> Fatal:
    """The verdict and a message for an exception raised by submission code."""
    text = f"{type(exc).__name__}: {exc}"
    low = text.lower()
    if isinstance(exc, integrity.TamperError):
        return Fatal(Verdict.REJECTED, str(exc))
    if isinstance(exc, MemoryError) or "out of memory" in low:
        where = "GPU" if "cuda" in low else "host"
        return Fatal(Verdict.OUT_OF_MEMORY, f"{what} ran out of {where} memory: {str(exc).splitlines()[0][:300]}")
    if device == "cpu" and _NEEDS_CUDA.search(low):
        return Fatal(
            Verdict.NEEDS_CUDA,
            f"this submission needs a CUDA device: {what}: {text.splitlines()[0][:300]}; run it with --device cuda",
        )
    if isinstance(exc, SystemExit):
        return Fatal(Verdict.RUNTIME_ERROR, f"{what} called exit({exc.code!r}); return the output instead")
    return Fatal(Verdict.RUNTIME_ERROR, f"{what} raised {type(exc).__name__}:\n{_trace(exc)}")


class Evaluation:
    def __init__(self, chan: ChildChannel, job: dict[str, Any]) -> None:
        self.chan = chan
        self.job = job
        self.job_dir = Path(job["job_dir"])
        self.device = job["device"]
        self.mode = job["mode"]
        self.settings = TimingSettings.model_validate(job["timing"])
        self.fn: Callable[[Any], Any] | None = None

    # ---- set-up, before any submission code runs -------------------------------------------------
    def setup(self) -> None:
        import torch

        self.torch = torch
        if self.device == "cuda":
            if not torch.cuda.is_available():
                raise Fatal(Verdict.INFRASTRUCTURE_ERROR, "this runner was asked for CUDA but PyTorch sees no GPU")
            torch.cuda.init()
        sys.path.insert(0, str(self.job_dir))
        try:
            self.reference = languages.import_file(self.job_dir / "reference.py", "reference")
        except BaseException as exc:
            raise Fatal(
                Verdict.INFRASTRUCTURE_ERROR, f"the problem's reference.py failed to import:\n{_trace(exc)}"
            ) from None
        self.generate_input = self.reference.generate_input
        self.check = self.reference.check_implementation
        self.speed_of_light = getattr(self.reference, "speed_of_light", None)
        self.sync: Callable[[], None] = torch.cuda.synchronize if self.device == "cuda" else (lambda: None)
        self.timer: timing.CpuTimer | timing.CudaTimer = (
            timing.CudaTimer(torch)
            if self.device == "cuda" and self.mode in ("benchmark", "ranked")
            else timing.CpuTimer()
        )
        self.modes_before = integrity.modes_active(torch)
        self.numerics = tuple(integrity.numeric_state(torch).items())  # immutable: found via gc, still unchangeable
        self.job_fingerprint = json.dumps([self.job, self.settings.model_dump(mode="json")], sort_keys=True)
        self.snapshot = integrity.Snapshot(
            integrity.watched_namespaces(torch, {"reference": self.reference}),
            instances={"evaluation": (self, frozenset({"fn"})), "timer": (self.timer, self.timer.MUTABLE)},
        )
        self.snapshot.seal()  # now that the snapshot itself is one of the evaluation's attributes
        self.chan.send(
            {
                "t": "hello",
                "torch": torch.__version__,
                "cuda": torch.version.cuda or getattr(torch.version, "hip", None),
                "gpu": torch.cuda.get_device_name() if self.device == "cuda" else None,
            }
        )

    def verify(self, output: object = None) -> None:
        self.snapshot.verify()
        if json.dumps([self.job, self.settings.model_dump(mode="json")], sort_keys=True) != self.job_fingerprint:
            raise integrity.TamperError("the submission changed the job (its cases or timing settings)")
        self.timer.verify()
        if integrity.modes_active(self.torch) != self.modes_before:
            raise integrity.TamperError("the submission left a torch function/dispatch mode active")
        integrity.check_output_types(self.torch, output)

    def progress(self, phase: str, detail: str = "") -> None:
        self.chan.send({"t": "progress", "phase": phase, "detail": detail})

    # ---- the submission -----------------------------------------------------------------------------
    def load_submission(self) -> None:
        self.progress("compiling", self.job["submission"])
        runtime = languages.runtime_for(self.job["lang"], self.job_dir)
        path = self.job_dir / self.job["submission"]
        shown = self.job.get("display_name") or path.name
        try:
            self.fn = runtime.load(path)
        except SyntaxError as exc:
            raise Fatal(
                Verdict.COMPILE_ERROR,
                f"syntax error in {shown}, line {exc.lineno}: {exc.msg}",
                compile_output=_trace(exc),
            ) from None
        except languages.CompileError as exc:
            raise Fatal(Verdict.COMPILE_ERROR, str(exc), compile_output=exc.output[-64_000:]) from None
        except languages.MissingEntryPoint as exc:
            raise Fatal(Verdict.REJECTED, f"{exc}; see the problem's templates") from None
        except BaseException as exc:
            if languages.is_build_failure(exc):
                raise Fatal(
                    Verdict.COMPILE_ERROR, "the inline extension did not compile", compile_output=str(exc)[-64_000:]
                ) from None
            raise classify(exc, self.device, f"importing {shown}") from None
        try:
            self.verify()
        except integrity.TamperError as exc:
            raise Fatal(Verdict.REJECTED, str(exc)) from None
        self.chan.send({"t": "compiled", "output": runtime.compile_output})

    def call(self, data: Any, what: str) -> Any:
        assert self.fn is not None
        try:
            out = self.fn(data)
            self.sync()
        except BaseException as exc:
            raise classify(exc, self.device, what) from None
        return out

    def check_output(self, case: dict[str, Any], output: Any, what: str) -> tuple[bool, str]:
        """Tamper checks, then the reference's check on freshly regenerated inputs."""
        try:
            self.verify(output)
        except integrity.TamperError as exc:
            raise Fatal(Verdict.REJECTED, f"{what}: {exc}") from None
        with integrity.pristine_numerics(self.torch, self.numerics):
            pristine = self.generate_input(**case)
            try:
                ok, message = normalise_check(self.check(pristine, output))
            except Exception as exc:
                ok, message = False, f"the check could not read the output: {type(exc).__name__}: {exc}"
            self.sync()
        return ok, message

    # ---- modes ----------------------------------------------------------------------------------
    def run_tests(self) -> bool:
        self.progress("testing", f"{len(self.job['tests'])} tests")
        all_ok = True
        for i, case in enumerate(self.job["tests"]):
            t0 = time.perf_counter()
            data = self.generate_input(**case)
            try:
                out = self.call(data, f"custom_kernel on test {i + 1}")
            except Fatal as f:
                self.chan.send(
                    {
                        "t": "test",
                        "index": i,
                        "verdict": f.verdict,
                        "message": f.message,
                        "duration_s": time.perf_counter() - t0,
                    }
                )
                raise
            del data
            ok, message = self.check_output(case, out, f"test {i + 1}")
            all_ok &= ok
            self.chan.send(
                {
                    "t": "test",
                    "index": i,
                    "verdict": Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER,
                    "message": message,
                    "duration_s": time.perf_counter() - t0,
                }
            )
        return all_ok

    def run_benchmarks(self, fresh: bool) -> None:
        assert self.fn is not None
        for i, case in enumerate(self.job["benchmarks"]):
            self.progress("benchmarking", f"case {i + 1} of {len(self.job['benchmarks'])}")
            self.run_benchmark(i, case, fresh)
        self.progress("benchmarking", f"finished {len(self.job['benchmarks'])} cases")

    def run_benchmark(self, i: int, case: dict[str, Any], fresh: bool) -> None:
        assert self.fn is not None
        sol = self.speed_of_light(**case) if callable(self.speed_of_light) else {}
        fresh = fresh and "seed" in case
        current = {"case": case, "data": None}
        public = self.generate_input(**case)

        def make_input(k: int) -> Any:
            if k < 0 or not fresh:
                current["case"] = case
                return public
            seed = int(self.chan.request({"t": "seed", "case": i, "call": k})["seed"])
            current["case"] = {**case, "seed": seed}
            current["data"] = None  # drop the last call's inputs before making new ones
            current["data"] = self.generate_input(**current["case"])
            return current["data"]

        def after_call(k: int, data: Any, out: Any) -> None:
            if not (fresh or k == 0):
                integrity.check_output_types(self.torch, out)
                return
            ok, message = self.check_output(current["case"], out, f"benchmark {i + 1}, timed call {k + 1}")
            if not ok:
                raise Fatal(Verdict.WRONG_ANSWER, f"benchmark {i + 1}, timed call {k + 1}: {message}")

        fn = self.fn

        def guarded(data: Any) -> Any:
            try:
                return fn(data)
            except BaseException as exc:
                raise classify(exc, self.device, f"custom_kernel on benchmark {i + 1}") from None

        try:
            result = timing.time_case(self.timer, guarded, make_input, after_call, self.settings)
        except Fatal as f:
            self.chan.send({"t": "bench", "index": i, "verdict": f.verdict, "message": f.message, "samples_ns": []})
            raise
        except BaseException as exc:
            f = classify(exc, self.device, f"benchmark {i + 1}")
            self.chan.send({"t": "bench", "index": i, "verdict": f.verdict, "message": f.message, "samples_ns": []})
            raise f from None
        try:
            self.verify()
        except integrity.TamperError as exc:
            raise Fatal(Verdict.REJECTED, f"benchmark {i + 1}: {exc}") from None
        self.chan.send(
            {
                "t": "bench",
                "index": i,
                "verdict": Verdict.ACCEPTED,
                "message": result.note,
                "samples_ns": result.samples_ns,
                "bytes": sol.get("bytes"),
                "flops": sol.get("flops"),
                "warmup_calls": result.warmup_calls,
                "spin_ns": result.spin_ns,
                "strict": result.strict,
            }
        )

    def run_profile(self) -> None:
        self.progress("profiling", self.job.get("profiler", "torch"))
        torch = self.torch
        texts = []
        for i, case in enumerate(self.job["benchmarks"]):
            data = self.generate_input(**case)
            self.call(data, f"custom_kernel on benchmark {i + 1}")  # warm-up / compile
            if self.job.get("profiler") == "ncu":
                torch.cuda.nvtx.range_push(NVTX_RANGE)
                self.call(data, f"custom_kernel on benchmark {i + 1}")
                torch.cuda.nvtx.range_pop()
                continue
            activities = [torch.profiler.ProfilerActivity.CPU]
            if self.device == "cuda":
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            with torch.profiler.profile(activities=activities) as prof:
                for _ in range(3):
                    self.call(data, f"custom_kernel on benchmark {i + 1}")
            sort = "self_cuda_time_total" if self.device == "cuda" else "self_cpu_time_total"
            texts.append(f"benchmark {i + 1} {case}:\n" + prof.key_averages().table(sort_by=sort, row_limit=15))
        if texts:
            if self.device == "cuda":  # an NVIDIA tool: absent on ROCm and on runners without the CUDA toolkit
                texts.insert(0, "Nsight Compute (ncu) is not available on this runner; the torch profiler's table:")
            self.chan.send({"t": "profile", "text": "\n\n".join(texts)[-60_000:]})

    def run(self) -> None:
        self.setup()
        self.load_submission()
        if self.mode in ("test", "ranked", "profile") and not self.run_tests():
            return
        if self.mode == "benchmark":
            self.run_benchmarks(fresh=False)
        elif self.mode == "ranked":
            self.run_benchmarks(fresh=True)
        elif self.mode == "profile":
            self.run_profile()


def main() -> int:
    result_fd = int(os.environ.pop(RESULT_FD_ENV))
    control_fd = int(os.environ.pop(CONTROL_FD_ENV))
    job, key, control_fd = read_control_header(control_fd)
    chan = ChildChannel(result_fd, control_fd, key)
    del key
    try:
        Evaluation(chan, job).run()
    except Fatal as f:
        chan.send({"t": "fatal", "verdict": f.verdict, "message": f.message, "compile_output": f.compile_output})
    except BaseException as exc:
        chan.send(
            {
                "t": "fatal",
                "verdict": Verdict.INFRASTRUCTURE_ERROR,
                "message": f"the harness failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}",
            }
        )
    chan.send({"t": "done"})
    sys.stdout.flush()
    return 0
