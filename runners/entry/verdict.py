"""From what the evaluator reported and how both processes ended, to one RunResult: statistics, score, verdict.

Whose fault it is decides everything a worker does next (retry, or show the user): the evaluator says so for
what it saw (``RFatal.fault``); the process outcomes settle the rest. Before the submission process was told to
load the file nothing is the submission's fault; after it, nothing it does can become ours.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import Any

from runners import stats
from runners.contract import (
    SPEED_OF_LIGHT,
    BenchmarkResult,
    DataType,
    Mode,
    RooflinePeaks,
    RunRequest,
    RunResult,
    SystemInfo,
    TestResult,
    Verdict,
    worst,
)
from runners.devices import PEAKS, DevicePeaks, impossible_below_ns, peaks_for, roofline_bound
from runners.durations import format_ns
from runners.entry.clock import bounds_for
from runners.entry.session import Outcomes
from runners.ipc.protocol import SUBMISSION_EXITED
from runners.oracle.checking import scrub
from runners.sandbox import ProcessOutcome

_KILL_SIGNALS = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "arithmetic fault",
    signal.SIGILL: "illegal instruction",
    signal.SIGABRT: "aborted",
    signal.SIGKILL: "killed",
}
SPEED_OF_LIGHT_MARGIN = 0.95
"""A median under this fraction of the most optimistic roofline bound is impossible, not fast."""


def build_result(
    request: RunRequest,
    out: Outcomes,
    system: SystemInfo,
    profile_text: str | None,
    peaks_table: Sequence[DevicePeaks] = PEAKS,
) -> RunResult:
    """The run's result, its statistics and roofline shares computed here, from the evaluator's raw samples and the
    device peaks (``peaks_table``: the datasheets with the operator's corrections)."""
    rep = out.report
    sub = out.submission
    if rep.hello is not None:
        system.torch = rep.hello.torch or system.torch
        system.cuda = rep.hello.cuda or system.cuda
        system.gpu_name = rep.hello.gpu or system.gpu_name
    sandboxes = [o for o in (out.oracle, sub) if o is not None]
    system.sandboxed = bool(sandboxes) and all(o.sandboxed for o in sandboxes)
    system.sandbox_note = sandboxes[-1].sandbox_note if sandboxes else ""
    tests = [
        TestResult(index=t.index, case=request.tests[t.index], verdict=t.verdict, message=t.message,
                   duration_s=t.duration_s)
        for t in rep.tests
    ]  # fmt: skip
    benches = [
        BenchmarkResult(
            index=b.index,
            case=request.benchmarks[b.index],
            verdict=b.verdict,
            message=b.message,
            stats=stats.timing_stats(b.samples_ns) if b.samples_ns else None,
            bytes_moved=b.bytes_moved,
            flops=b.flops,
            calls_per_sample=b.trust.calls_per_sample if b.trust else 1,
            window_overhead_ns=b.trust.overhead_ns if b.trust else None,
            bounded_samples=b.trust.bounded_calls if b.trust else 0,
            degraded_samples=b.trust.degraded_calls if b.trust else 0,
        )
        for b in rep.benches
    ]
    peaks = peaks_for(system.gpu_name, peaks_table)  # (None on the CPU: the evaluator reports no GPU there)
    roofline_share = fill_roofline(benches, peaks, request.dtype)
    profile = profile_text
    if rep.profile is not None:
        profile = (profile + "\n\n" if profile else "") + rep.profile.text
    base: dict[str, Any] = dict(
        mode=request.mode,
        tests=tests,
        benchmarks=benches,
        compile_output=scrub((rep.fatal.compile_output if rep.fatal and rep.fatal.compile_output else None)
                             or (rep.compiled.output if rep.compiled else "")),
        stdout=scrub(sub.stdout) if sub else "",
        stderr=scrub(sub.stderr) if sub else "",
        stdout_truncated=bool(sub and sub.stdout_truncated),
        stderr_truncated=bool(sub and sub.stderr_truncated),
        system=system,
        profile=scrub(profile) if profile else profile,
        phase_times=dict(rep.times),
        roofline_share=roofline_share,
        roofline=peaks_used(peaks, request.dtype) if peaks is not None else None,
    )
    # Loaded once the evaluator said it was about to load the file: what comes before (the calibration, the
    # baselines) ran no user code, so a timeout there is never the submission's.
    loaded = rep.compiled is not None or "compiling" in rep.times
    platform = platform_failure(out)  # (issue 37: what the platform did to the run is never the submission's)
    if platform and (rep.fatal is not None or not rep.done):  # a run that finished and was judged stays judged
        return RunResult(verdict=Verdict.INFRASTRUCTURE_ERROR, message=platform, fault="runner", **base)
    if rep.fatal is not None:
        return _fatal(request, rep.fatal, rep.phase, sub, base)
    if not rep.done:
        return _no_report(request, out, rep.phase, loaded, base)
    verdict = worst([t.verdict for t in tests] + [b.verdict for b in benches])
    message = ""
    if verdict is Verdict.WRONG_ANSWER:
        failed = [t for t in tests if t.verdict is Verdict.WRONG_ANSWER]
        if failed:
            first = failed[0]
            message = f"{len(failed)} of {len(tests)} tests failed; first: test {first.index + 1}: {first.message}"
    elif request.mode in (Mode.BENCHMARK, Mode.RANKED) and verdict.passed and len(benches) < len(request.benchmarks):
        return RunResult(
            verdict=Verdict.INFRASTRUCTURE_ERROR,
            message="the evaluator returned fewer benchmark results than cases",
            **base,
        )
    if request.mode is Mode.TEST and len(tests) < len(request.tests) and verdict.passed:
        return RunResult(verdict=Verdict.INFRASTRUCTURE_ERROR, message="the evaluator skipped tests", **base)
    impossible = _faster_than_light(benches, peaks)
    if impossible and verdict.passed:
        return RunResult(verdict=Verdict.REJECTED, message=impossible, rejection=SPEED_OF_LIGHT, **base)
    score = None
    if verdict.passed and request.mode in (Mode.BENCHMARK, Mode.RANKED) and benches:
        score = stats.score([b.stats.median_ns for b in benches if b.stats], request.ranking_by)
    if verdict.passed:
        message = _summary(request, tests, benches, score)
    return RunResult(verdict=verdict, message=message, score_ns=score, **base)


def platform_failure(out: Outcomes) -> str:
    """What the platform did to a process of the run that failed it (the sandbox's ``infrastructure_failure``: a
    SIGKILL from outside the sandbox, the host's out-of-memory killer, the runner's disk full below the job's limit),
    in words for the user; '' when nothing. A limit the run itself exceeded is never here: that stays its own."""
    for name, o in (("submission", out.submission), ("evaluator", out.oracle)):
        if o is not None and o.infrastructure_failure and not o.cancelled:
            return f"the runner failed, not the submission: {o.infrastructure_failure} (in the {name}'s sandbox)"
    return ""


def _fatal(request: RunRequest, fatal: Any, phase: str, sub: ProcessOutcome | None, base: dict[str, Any]) -> RunResult:
    if fatal.fault != "submission":
        who = f"the problem {request.problem!r}" if fatal.fault == "problem" else "the runner"
        fault = "problem" if fatal.fault == "problem" else "runner"
        return RunResult(verdict=Verdict.INFRASTRUCTURE_ERROR, message=f"{who} failed: {fatal.message}", fault=fault,
                         **base)  # fmt: skip
    verdict, message = fatal.verdict, fatal.message
    if verdict is Verdict.INFRASTRUCTURE_ERROR:  # never the submission's to claim
        verdict = Verdict.RUNTIME_ERROR
    if verdict is Verdict.TIMEOUT:
        return RunResult(verdict=verdict, message=_timeout_message(request, phase), **base)
    ended = message == SUBMISSION_EXITED or bool(sub and sub.killed_reason and not sub.cancelled)
    if sub is not None and ended:
        verdict, message = _how_it_ended(sub, phase)
    return RunResult(verdict=verdict, message=message, **base)


def _how_it_ended(sub: ProcessOutcome, phase: str) -> tuple[Verdict, str]:
    """What the submission process's end says about the submission."""
    if sub.out_of_memory:
        return Verdict.OUT_OF_MEMORY, f"the submission used more than its host memory limit ({sub.killed_reason})"
    if sub.timed_out:
        return Verdict.TIMEOUT, f"the run did not finish in time ({sub.killed_reason}, while {phase})"
    if sub.killed_reason and not sub.cancelled:  # (our own stop after the evaluator's end is not its doing)
        return Verdict.RUNTIME_ERROR, f"the run was stopped: {sub.killed_reason}"
    if sub.cancelled and sub.signal == signal.SIGKILL:  # the runner's own stop: the submission's end is unknown
        return Verdict.RUNTIME_ERROR, (
            f"the submission process cut its connection to the evaluator while {phase} and did not end by itself "
            "within seconds; a submission must not exit, close the harness's descriptors or kill its own process"
        )
    if sub.signal:
        name = _KILL_SIGNALS.get(sub.signal, f"signal {sub.signal}")  # type: ignore[call-overload]  # IntEnum keys
        return Verdict.RUNTIME_ERROR, f"the submission process crashed ({name}, signal {sub.signal}) while {phase}"
    return Verdict.RUNTIME_ERROR, (
        f"the submission process exited with code {sub.returncode} while {phase}; a submission must not exit "
        "(sys.exit, os._exit) or kill its own process"
    )


def _no_report(request: RunRequest, out: Outcomes, phase: str, loaded: bool, base: dict[str, Any]) -> RunResult:
    """The evaluator ended without saying it was done."""
    oracle = out.oracle
    if oracle is not None and oracle.timed_out and loaded:
        return RunResult(verdict=Verdict.TIMEOUT, message=_timeout_message(request, phase), **base)
    how = "was stopped" if oracle is None else _ended(oracle)
    return RunResult(verdict=Verdict.INFRASTRUCTURE_ERROR, message=f"the evaluator {how} while {phase}", **base)


def _timeout_message(request: RunRequest, phase: str) -> str:
    b = bounds_for(request, 0.0)  # the submission's own limits: a compile allowance only where its language compiles
    parts = f"{b.run_s:.0f} s for this mode's run" + (f", {b.compile_s:.0f} s for compiling" if b.compile_s else "")
    return (
        f"the run did not finish within {b.user_s:.0f} s ({parts}; it was {phase}); look for an endless loop or a "
        "far too slow kernel"
    )


def _ended(o: ProcessOutcome) -> str:
    if o.killed_reason:
        return f"was stopped ({o.killed_reason})"
    if o.signal:
        return f"crashed (signal {o.signal})"
    return f"exited with code {o.returncode} before it finished"


def fill_roofline(benches: Sequence[BenchmarkResult], peaks: DevicePeaks | None, dtype: DataType) -> float | None:
    """Fill in each timed benchmark's roofline bound and share; the run's share (the geometric mean of the cases'),
    or None unless every benchmark has one."""
    if peaks is None:
        return None
    for b in benches:
        bound = roofline_bound(b.bytes_moved, b.flops, peaks, dtype)
        if bound is not None and b.stats is not None and b.stats.median_ns > 0:
            b.roofline_ns, b.roofline_limit = bound
            b.roofline_share = b.roofline_ns / b.stats.median_ns
    shares = [b.roofline_share for b in benches]
    if not shares or any(s is None or s <= 0 for s in shares):
        return None
    return stats.geometric_mean([s for s in shares if s is not None])


def peaks_used(peaks: DevicePeaks, dtype: DataType) -> RooflinePeaks:
    """What a result says about the peaks its roofline bounds used."""
    return RooflinePeaks(
        device=peaks.name,
        dtype=dtype,
        memory_bytes_per_s=peaks.memory_bytes_per_s,
        flops_per_s=peaks.flops_per_s.get(dtype),
        source=peaks.source,
    )


def _faster_than_light(benches: list[BenchmarkResult], peaks: DevicePeaks | None) -> str:
    if peaks is None:
        return ""
    for b in benches:
        if b.stats is None or not (b.bytes_moved or b.flops):
            continue
        floor = impossible_below_ns(b.bytes_moved, b.flops, peaks)
        if b.stats.median_ns < SPEED_OF_LIGHT_MARGIN * floor:
            return (
                f"benchmark {b.index + 1}: a median of {format_ns(b.stats.median_ns)} is faster than the "
                f"{peaks.name} can possibly do this work ({format_ns(floor)} at its datasheet peaks); a result "
                "this fast was not measured honestly and is not ranked"
            )
    return ""


def blame_the_floor(
    request: RunRequest, result: RunResult, reference_medians: Sequence[float | None], peaks: DevicePeaks | None
) -> RunResult:
    """A result refused as faster than light whose problem's own reference, timed the same way on the same device,
    is faster than that floor too: the problem's ``speed_of_light`` overstates the work (bits for bytes, a factor
    too many), so the refusal is the problem's fault, not a verdict on the submission (red team, 2026-11-25)."""
    if result.rejection != SPEED_OF_LIGHT or peaks is None:
        return result
    for b, median in zip(result.benchmarks, reference_medians, strict=False):
        if median is None or not (b.bytes_moved or b.flops):
            continue
        floor = impossible_below_ns(b.bytes_moved, b.flops, peaks)
        if median < SPEED_OF_LIGHT_MARGIN * floor:
            message = (
                f"the problem {request.problem!r} failed: its speed_of_light for benchmark {b.index + 1} declares "
                f"work the {peaks.name} cannot do in under {format_ns(floor)}, yet the problem's own reference took "
                f"{format_ns(median)}: speed_of_light overstates the work (bytes, not bits; each tensor counted once), "
                "so no result of this problem can be judged against it; tell the leaderboard's admins"
            )
            return result.model_copy(update={"verdict": Verdict.INFRASTRUCTURE_ERROR, "message": message,
                                             "rejection": "", "fault": "problem", "score_ns": None})  # fmt: skip
    return result


def _summary(request: RunRequest, tests: list[TestResult], benches: list[BenchmarkResult], score: float | None) -> str:
    parts = []
    if tests:
        parts.append(f"{len(tests)} of {len(tests)} tests passed")
    if score is not None:
        parts.append(f"score {format_ns(score)} ({request.ranking_by.value} of {len(benches)} benchmark medians)")
    notes = [b.message for b in benches if b.message]
    if notes:
        parts.append(notes[0])
    if request.world_size > 1:  # docs/multigpu.md: the time is the slowest rank's
        timed = ", timed as the slowest" if score is not None else ""
        parts.append(f"{request.world_size} ranks, one per GPU{timed}")
    return "; ".join(parts) or "accepted"
