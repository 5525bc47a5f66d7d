"""Timing on the evaluator's side: the echo process that calibrates its clock, the warm-up and the timed batches
of each benchmark case (each batch inside one trusted window, on inputs of its own), and profile mode.

``Benchmarking`` is part of :class:`runners.oracle.evaluate.Evaluator` (its state: the job, the peer, the arenas,
the window); it lives here so that the evaluator's set-up and checking read apart from its timing."""

from __future__ import annotations

import contextlib
import math
import secrets
import subprocess
import time
from collections.abc import Callable
from typing import Any

from runners.contract import Verdict
from runners.ipc.arena import Arena, ArenaError
from runners.ipc.protocol import (
    Load,
    Loaded,
    LoadFailed,
    Profile,
    ProfileText,
    RBaseline,
    RBench,
    RProfile,
    Trust,
)
from runners.ipc.wiring import BASELINE, CALIBRATION
from runners.oracle.base import (
    DEFAULT_HEAP,
    MIB,
    PROBLEM_DIR,
    Fatal,
    case_text,
    derive_seed,
    tensor_bytes,
)
from runners.oracle.checking import speed_of_light_of
from runners.oracle.helpers import Helper, start_helpers
from runners.oracle.peer import Peer, PeerFailed
from runners.oracle.timing import CPU_MIN_WINDOWS, Sample, cap_overhead, sample_of, tighten_case, time_case
from runners.oracle.window import Calibration, CpuWindow, GpuWindow, Window, calibrate, snapshots

SLACK_SHARE = 50
"""Batches hold enough work that the most a rewritten reading could hide in one window is 1/50 of it."""
MAX_BATCH_CALLS = 64


def enqueue_timeout_s(host_times: list[float]) -> float:
    """How long a timed call may take to be queued before the evaluator stops waiting for it to queue first: four
    times the warm-up calls' 90th percentile host time (the first call left out, it builds), within 10 ms and 2 s."""
    recent = sorted(host_times[1:] or host_times)
    return min(max(4 * recent[int(0.9 * (len(recent) - 1))], 0.01), 2.0)


def adjusted_samples(samples: list[Sample], cal: Calibration, *, cuda: bool) -> tuple[list[Sample], float]:
    """A case's samples and the window overhead they count: on the CPU the overhead capped by the case's own
    readings (the CPU is shared: the echo's calibration may have run in a busier moment), on a GPU the readings cut
    by more than the window's typical cost allows, in the case's median (timing.py)."""
    if not cuda:
        return cap_overhead(samples, cal.overhead_ns)
    return tighten_case(samples, cal.typical_ns, cal.min_call_ns), cal.overhead_ns


def case_notes(samples: list[Sample], settings: Any, check_s: float, *, cuda: bool) -> list[str]:
    """What a case's result says about its samples: batches the submission synchronised inside, a budget that ran out
    before the samples asked for (red team, 2026-11-25: a check of 6 s), and on a GPU many batches the evaluator's
    clock bounded (on the CPU its clock sets most samples: window.py)."""
    bounded = sum(s.bounded for s in samples)
    degraded = sum(s.degraded for s in samples)
    notes = []
    if degraded:
        notes.append(
            f"custom_kernel waited for the GPU inside {degraded} of {len(samples)} timed batches; the host's "
            "time was counted in those"
        )
    if len(samples) < min(settings.min_samples, settings.max_samples):
        notes.append(
            f"only {len(samples)} of the {settings.min_samples} timed samples asked for fit the case's time "
            f"budget; the problem's check of the outputs took {check_s:.1f} s of it"
        )
    if cuda and bounded > len(samples) // 4:
        notes.append(
            f"in {bounded} of {len(samples)} timed batches the evaluator's clock allowed less than the "
            "submission process's own timing said; those count the evaluator's time"
        )
    return notes


def case_trust(samples: list[Sample], overhead_ns: float) -> Trust:
    """How far a case's samples rest on the evaluator's own clock (the result's ``trust``)."""
    windows = sorted(s.window_ns for s in samples)
    calls = sorted(s.calls for s in samples)
    return Trust(
        overhead_ns=overhead_ns,
        bounded_calls=sum(s.bounded for s in samples),
        degraded_calls=sum(s.degraded for s in samples),
        window_median_ns=windows[len(windows) // 2],
        calls_per_sample=calls[len(calls) // 2],
    )


class CaseRun:
    """One benchmark case's calls (``Benchmarking.run_benchmark``): the warm-up calls (the first one's output checked
    and its size counted in the case's footprint) and the timed batches (inputs of their own, every output checked
    outside the window, the next batch's size agreed), with what they carry from call to call."""

    def __init__(self, ev: Benchmarking, i: int, case: dict[str, Any], fresh: bool, cal: Calibration) -> None:
        self.ev, self.i, self.case, self.fresh, self.cal = ev, i, case, fresh, cal
        self.public = ev.generate(case)
        self.host_times: list[float] = []
        self.enqueue_timeout = 0.0
        self.degraded = 0
        self.calls = 1
        """The next batch's calls."""
        self.made = 0
        """Timed calls made so far."""
        self.check_s = 0.0
        """Seconds the problem's check of the timed outputs took (outside the windows, inside the case's budget)."""
        self.footprint = tensor_bytes(ev.torch, self.public, cuda=ev.cuda)
        """Bytes of one call's inputs and output (what bounds a batch by the L2: ``_batch_size``)."""

    def warm(self, n: int) -> float:
        ev = self.ev
        t0 = time.perf_counter()
        out = ev.call(ev.next_k(), ev.place([self.public]), timed=False, enqueue_timeout=0.0)
        if out.error is not None:
            raise ev.fail_call(out.error, f"benchmark {self.i + 1}, warm-up call {n + 1}")
        self.host_times.append(time.perf_counter() - t0)
        if n == 0:
            self.footprint += tensor_bytes(ev.torch, out.outputs[0], cuda=ev.cuda)
            ok, message = ev.check_output(ev.generate(self.case), out.outputs[0])
            if not ok:
                raise Fatal(Verdict.WRONG_ANSWER, f"benchmark {self.i + 1}: {message}", "submission")
        return self.host_times[-1]

    def timed(self, n: int) -> Sample:
        ev, cal = self.ev, self.cal
        if n == 0:
            self.enqueue_timeout = enqueue_timeout_s(self.host_times)
        calls = self.calls
        batch = self._inputs(calls)
        self.made += calls
        # The check's copy of the public input, made before the call rather than after it, so that the GPU runs
        # the same kind of work (the generator's kernels) just before every window in both modes
        # (docs/measurement.md, "Checked against Nsight Compute": the matmul's excess over ncu).
        pristine = None if self.fresh else ev.generate(self.case)
        k = ev.next_k()
        out = ev.call(k, ev.place(batch), timed=True, enqueue_timeout=self.enqueue_timeout)
        if out.error is not None:
            raise ev.fail_call(out.error, f"benchmark {self.i + 1}, timed call {self.made}")
        self._check(batch, pristine, out.outputs, calls)
        assert ev.window is not None and ev.peer is not None
        reading = out.reading_ns if out.reading_ns is not None else ev.window.reading(ev.peer, k, 30.0)
        self.degraded += out.degraded
        if n == 2 and self.degraded == 3:
            self.enqueue_timeout = 0.0  # it synchronises every time: stop waiting for it to queue first
        sample = sample_of(reading, out.window_ns, cal.overhead_ns, cal.event_ns, out.allowance_ns,
                           out.degraded, calls, cal.min_call_ns)  # fmt: skip
        sample = ev.slowest(sample)
        self.calls = ev.agree_calls(ev._batch_size(sample, out, calls, cal, self.footprint))
        return sample

    def _inputs(self, calls: int) -> list[Any]:
        """A batch's inputs: fresh ones from the secret wherever the case has a seed, else the public input."""
        if not self.fresh:
            return [self.public] * calls
        ev = self.ev
        seeds = [derive_seed(ev.secret, self.i, self.made + j) for j in range(calls)]
        return [ev.generate({**self.case, "seed": seed}) for seed in seeds]

    def _check(self, batch: list[Any], pristine: Any, outputs: list[Any], calls: int) -> None:
        """Every timed output checked (outside the window), against inputs the submission never held: the fresh
        ones, or for a case without a seed the public input regenerated (the submission may have written to it)."""
        checked = time.perf_counter()
        for j, output in enumerate(outputs):
            ok, message = self.ev.check_output(batch[j] if self.fresh else pristine, output)
            if not ok:
                where = f"benchmark {self.i + 1}, timed call {self.made - calls + j + 1}"
                raise Fatal(Verdict.WRONG_ANSWER, f"{where}: {message}", "submission")
        self.check_s += time.perf_counter() - checked


class Benchmarking:
    """The evaluator's timing (mixed into ``Evaluator``, whose attributes it uses)."""

    # The Evaluator's state these methods use (set in Evaluator.__init__/setup/start).
    job: Any
    torch: Any
    cuda: bool
    driver: Any
    peer: Peer | None
    window: Window | None
    echo: Any
    baseline_process: Any
    baseline_echo: Any
    spares: dict[str, Helper]
    arenas: dict[str, Arena]
    dev_in: str
    report: Any
    settings: Any
    secret: int | str
    deadline: float
    calibration: Calibration | None
    speed_of_light: Any
    flush_buffer: Any
    l2_bytes: int
    workdir: Any

    def run_benchmarks(self, fresh: bool) -> None:
        calibration = self.calibration  # on a GPU taken in start(), before the submission's file was loaded
        if calibration is None:
            self.progress("calibrating", "the evaluator's clock")
            calibration = self.calibrate()
        unseeded = [i + 1 for i, case in enumerate(self.job.benchmarks) if "seed" not in case]
        if fresh and unseeded:
            # Without a seed every call would get the same public input: a ranked run could be cached, not timed.
            message = (
                f"benchmark case(s) {unseeded} of the problem have no seed; a ranked run needs fresh inputs "
                "for every call (task.yml: give each benchmark a seed)"
            )
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "problem")
        for i, case in enumerate(self.job.benchmarks):
            self.progress("benchmarking", f"case {i + 1} of {len(self.job.benchmarks)}")
            self.run_benchmark(i, case, fresh, calibration)
        self.progress("benchmarking", f"finished {len(self.job.benchmarks)} cases")

    def run_benchmark(
        self, i: int, case: dict[str, Any], fresh: bool, cal: Calibration, baseline: str | None = None
    ) -> None:
        """Warm-up calls, then timed batches: each batch is ``calls`` calls back to back in one trusted window, each on
        inputs of its own (fresh ones wherever the case has a seed), sized so that what a rewritten reading could
        hide in one window (the calibration's slack) is a small share of the batch (docs/measurement.md). For a
        ``baseline`` the same, reported as that baseline's case (its failure is raised, never reported as the
        submission's). The calls are ``CaseRun``'s; what the samples say (``adjusted_samples``, ``case_notes``,
        ``case_trust``) is decided by pure functions."""
        sol = self._speed_of_light(case)
        run = CaseRun(self, i, case, fresh, cal)
        try:
            timing = time_case(run.warm, run.timed, self.settings, self.case_clock(),
                               precision_after=0 if self.cuda else CPU_MIN_WINDOWS)  # fmt: skip
        except Fatal as f:
            if baseline is None:
                self.report.send(RBench(index=i, verdict=f.verdict, message=f.message))
            raise
        samples, overhead = adjusted_samples(timing.samples, cal, cuda=self.cuda)
        if baseline is not None:
            self.report.send(RBaseline(label=baseline, index=i, samples_ns=[s.ns for s in samples]))
            return
        notes = case_notes(samples, self.settings, run.check_s, cuda=self.cuda)
        self.report.send(
            RBench(
                index=i,
                verdict=Verdict.ACCEPTED,
                message="; ".join(notes),
                samples_ns=[s.ns for s in samples],
                bytes_moved=sol.get("bytes"),
                flops=sol.get("flops"),
                trust=case_trust(samples, overhead),
            )
        )
        if self.cuda:
            self.torch.cuda.empty_cache()

    def _speed_of_light(self, case: dict[str, Any]) -> dict[str, int]:
        """The problem's bytes and flops of ``case`` (its ``speed_of_light``), where it has one."""
        if not callable(self.speed_of_light):
            return {}
        try:
            return speed_of_light_of(self.speed_of_light, case)
        except BaseException as exc:
            self._problem_or_memory(exc, f"speed_of_light({case_text(case)})")
        return {}

    # ---- what the ranks of a run of several agree on (runners/oracle/ranks.py); one rank: as measured ----------
    def case_clock(self) -> Callable[[], float]:
        """The clock a case's warm-up and stopping rule read."""
        return time.perf_counter

    def slowest(self, sample: Sample) -> Sample:
        """The sample a timed batch counts."""
        return sample

    def agree_calls(self, calls: int) -> int:
        """The calls of the next batch."""
        return calls

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
        ncu = self.job.profiler == "ncu"
        for i, case in enumerate(self.job.benchmarks):
            data = self.generate(case)
            # Under Nsight Compute the recorded call gets inputs of its own (fresh where the case has a seed) and its
            # output is checked: what the collector records must be a call that did the work (docs/anti-cheat.md).
            recorded = None
            if ncu:
                recorded = self.generate({**case, "seed": derive_seed(self.secret, i, 1 << 30)} if "seed" in case
                                         else case)  # fmt: skip
            placements = self.place([data] if recorded is None else [data, recorded])
            for placement in placements:
                for dst, src in placement.copies:
                    dst.copy_(src)
            if self.cuda:
                self.torch.cuda.synchronize()
            k = self.next_k()
            label = f"benchmark {i + 1} {case_text(case)}"
            extra = placements[1].value if recorded is not None else None
            self.peer.send(Profile(k=k, data=placements[0].value, label=label, nvtx=ncu, recorded=extra))
            answer = self.peer.expect(ProfileText, self.remaining(), k)
            if answer.error is not None:
                raise self.fail_call(answer.error, label)
            if recorded is not None:
                self._check_recorded(recorded, answer, label)
            if answer.text:
                texts.append(answer.text)
        if texts:  # (under Nsight Compute there are none: the entry reads ncu's report after the run)
            self.report.send(RProfile(text="\n\n".join(texts)[-60_000:]))

    def _check_recorded(self, inputs: Any, answer: ProfileText, label: str) -> None:
        """The recorded call's output against the reference on its inputs (which the submission never held before
        that call): a wrong one fails the pass, whose record then counts for nothing."""
        try:
            (output,) = snapshots(self.torch, answer.outputs, 1, self.arenas)
        except (ArenaError, RuntimeError, TypeError, ValueError, OverflowError) as exc:
            raise Fatal(Verdict.WRONG_ANSWER, f"{label}, the recorded call: the output could not be read: {exc}",
                        "submission") from None  # fmt: skip
        if self.cuda:
            self.torch.cuda.synchronize()
        ok, message = self.check_output(inputs, output)
        if not ok:
            raise Fatal(Verdict.WRONG_ANSWER, f"{label}, the recorded call: {message}", "submission")

    # ---- baselines: functions of the reference, timed like the submission --------------------------------------
    def time_baselines_calibrated(self) -> None:
        """The baselines with a calibration: the GPU's (taken before the load for the submission too), or on the
        CPU one of their own from a second echo, so that the submission's is still taken warm after its tests."""
        cal = self.calibration
        if cal is None:
            main_echo, self.echo = self.echo, self.baseline_echo
            self.baseline_echo = None
            try:
                cal = self.calibrate()
            except Fatal as f:
                for label, _ in self.job.baselines:
                    self.report.send(RBaseline(label=label, index=0, error=f.message[:4000]))
                self._stop_helper(self.baseline_process)
                self.baseline_process = None
                return
            finally:
                self.echo = main_echo
        self.time_baselines(cal)

    def time_baselines(self, cal: Calibration) -> None:
        """Time each of the job's baselines on every benchmark case, through the same protocol, window, batches and
        statistics as the submission, in a process of our own that runs only the problem's code, before the
        submission's file is loaded (so no user code runs beside it), within the job's baseline budget (which the
        entry adds to every time limit, so it never eats the submission's time). Ranked inputs come from a secret
        of their own, so no baseline output for the submission's timed inputs is ever computed. A baseline that
        fails is reported (at the case it reached) as not timed; it never fails the submission's run."""
        _, peer = self.baseline_process
        saved = (self.peer, self.window, self.arenas, self.dev_in, self.deadline, self.secret)
        arenas: dict[str, Arena] = {}
        fresh = all("seed" in case for case in self.job.benchmarks)
        reference = self.workdir / PROBLEM_DIR / "reference.py"
        budget_end = time.monotonic() + self.job.baselines_budget_s
        reported: dict[str, int] = {}
        at = self.job.baselines[0][0]

        def failed(label: str, why: str) -> None:
            self.report.send(RBaseline(label=label, index=reported.get(label, 0), error=why[:4000]))
            reported[label] = -1  # nothing more of it

        try:
            self._baseline_arenas(peer, arenas)
            self.peer, self.arenas, self.dev_in = peer, arenas, "dev_in"
            self.deadline = min(self.deadline, budget_end)
            self.secret = secrets.token_hex(16)
            self.window = (
                GpuWindow(self.torch, self.driver, arenas, "ctrl", self.flush_buffer)
                if self.cuda
                else CpuWindow(self.torch, arenas)
            )
            for label, function in self.job.baselines:
                at = label
                if time.monotonic() >= budget_end:
                    failed(label, f"the baselines' time budget ({self.job.baselines_budget_s:.0f} s) was spent")
                    continue
                self.progress("baseline", f"timing the {label}")
                peer.send(Load(lang=BASELINE, path=str(reference), display_name=function))
                loaded = peer.poll((Loaded, LoadFailed), max(budget_end - time.monotonic(), 0.0))
                if not isinstance(loaded, Loaded):
                    failed(label, loaded.message if loaded is not None else "loading it did not finish in its budget")
                    continue
                for i, case in enumerate(self.job.benchmarks):
                    try:
                        self.run_benchmark(i, case, fresh, cal, baseline=label)
                    except Fatal as f:
                        failed(label, f"benchmark {i + 1}: {f.message}")
                        break
                    reported[label] = i + 1
        except (PeerFailed, ArenaError, RuntimeError, MemoryError) as exc:
            if reported.get(at, 0) >= 0:  # the case it reached (the parent accepts an error there)
                failed(at, f"the baseline process failed: {exc}")
        finally:
            self.peer, self.window, self.arenas, self.dev_in, self.deadline, self.secret = saved
            self._stop_helper(self.baseline_process)
            self.baseline_process = None
            self._free(arenas)

    def _free(self, arenas: dict[str, Arena]) -> None:
        """Release a helper process's shared memory (after the process is gone)."""
        for arena in arenas.values():
            with contextlib.suppress(Exception):
                arena.owner.close()
        if self.cuda:
            self.torch.cuda.empty_cache()

    def _baseline_arenas(self, peer: Peer, arenas: dict[str, Arena]) -> None:
        """The baseline process's shared memory, filled into ``arenas`` as it is made (so a failure half-way frees
        what was made), then mapped in the process."""
        torch = self.torch
        if self.cuda:
            free, _ = torch.cuda.mem_get_info()
            heap = int(min(self.job.heap_bytes or DEFAULT_HEAP, free // 2))
            for name, size in (("ctrl", 2 * MIB), ("dev_in", 64 * MIB), ("heap", heap)):
                arenas[name] = Arena.create(torch, name, "cuda", size, self.driver)
        for name in ("host_in", "host_out"):
            arenas[name] = Arena.create(torch, name, "host", 8 * 1024 * MIB)  # sparse: only what is written
        self.connect(peer, arenas, "heap" if self.cuda else None)
        for arena in arenas.values():
            arena.close_fd()

    # ---- calibration: the evaluator's own echo process -------------------------------------------------------
    def _start_helpers(self, names: list[str]) -> dict[str, Helper]:
        """The named helpers: each one pre-started for it before the job arrived where it is still there
        (``spares``), the rest started now, together (``start_helpers``: forked from one zygote on the CPU)."""
        started: dict[str, Helper] = {}
        for name in names:
            spare = self.spares.pop(name, None)
            if spare is not None and spare[0].poll() is None:
                started[name] = spare
            elif spare is not None:  # ended: let go of it (and of its zygote, once none of its helpers is left)
                spare[0].kill()
                spare[1].close()
        fresh = [n for n in names if n not in started]
        started.update(start_helpers(self.workdir, fresh, fork=self.job.device == "cpu") if fresh else {})
        return started

    def _stop_helper(self, helper: Any) -> None:
        if helper is None:
            return
        proc, peer = helper
        # Killed, not asked to quit: it ran only our code and holds nothing to keep, and an interpreter with PyTorch
        # (and a CUDA context) took seconds to exit by itself (3 s on a loaded CPU). Its memory is freed after it.
        proc.kill()
        peer.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)

    def calibrate(self) -> Calibration:
        torch = self.torch
        _, peer = self.echo
        arenas: dict[str, Arena] = {}
        try:
            if self.cuda:
                for name, size in (("ctrl", 2 * MIB), ("dev_in", 2 * MIB), ("heap", 64 * MIB)):
                    arenas[name] = Arena.create(torch, name, "cuda", size, self.driver)
            for name in ("host_in", "host_out"):
                arenas[name] = Arena.create(torch, name, "host", 16 * MIB)
            self.connect(peer, arenas, "heap" if self.cuda else None)
            self.progress("echo ready")  # (a mark in phase_times only: where calibration time goes)
            for arena in arenas.values():
                arena.close_fd()
            peer.send(Load(lang=CALIBRATION, path="", display_name="calibration"))
            peer.expect(Loaded, 60.0)
            window: Window = (
                GpuWindow(torch, self.driver, arenas, "ctrl", self.flush_buffer)
                if self.cuda
                else CpuWindow(torch, arenas)
            )
            calibration = calibrate(torch, window, peer, arenas, time.monotonic() + 120.0)
            self.progress("calibrated")
            return calibration
        except (PeerFailed, RuntimeError) as exc:
            message = f"calibrating the evaluator's clock failed: {exc}"
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "runner") from None
        finally:
            self._stop_helper(self.echo)
            self.echo = None
            self._free(arenas)
