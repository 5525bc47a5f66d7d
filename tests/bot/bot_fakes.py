"""Results for the bot's tests, served by the project's fake launcher (``runners.launchers.fake.FakeLauncher``).

The responders here add what a report shows and the default responder leaves out (bytes moved and the roofline
shares the runner computes from them on the device's GPU, program output for the logs attachment). ``held``
holds a run at its testing phase so that a test can look at the live status message while the job is under way.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from runners.contract import (
    BenchmarkResult,
    Phase,
    ProgressEvent,
    RunRequest,
    RunResult,
    TestResult,
    TimingStats,
    Verdict,
)
from runners.devices import peaks_for
from runners.entry.verdict import fill_roofline, peaks_used
from runners.launchers.fake import FakeLauncher

MEDIAN_NS = 12_500.0
PROGRESS = (ProgressEvent(phase=Phase.COMPILING), ProgressEvent(phase=Phase.TESTING, detail="2 tests"))


def accepted(request: RunRequest, median_ns: float = MEDIAN_NS) -> RunResult:
    tests = [TestResult(index=i, case=c, verdict=Verdict.ACCEPTED) for i, c in enumerate(request.tests)]
    benches = []
    if request.mode != "test":
        stats = TimingStats(
            samples=100,
            median_ns=median_ns,
            mean_ns=median_ns,
            std_ns=300,
            stderr_ns=30,
            min_ns=median_ns,
            max_ns=median_ns,
            p25_ns=median_ns - 100,
            p75_ns=median_ns + 200,
        )
        benches = [
            BenchmarkResult(index=i, case=c, verdict=Verdict.ACCEPTED, stats=stats, bytes_moved=20_000_000)
            for i, c in enumerate(request.benchmarks)
        ]
    peaks = peaks_for(request.device_name)  # the GPU a runner for the device has ('cpu': none)
    share = fill_roofline(benches, peaks, request.dtype)
    now = datetime.now(UTC)
    return RunResult(
        verdict=Verdict.ACCEPTED,
        mode=request.mode,
        tests=tests,
        benchmarks=benches,
        score_ns=median_ns if benches else None,
        stdout="hello from the kernel\n",
        profile="kernel  time  occupancy\nadd_one 12us 87%\n" if request.mode == "profile" else None,
        started_at=now,
        finished_at=now,
        roofline_share=share,
        roofline=peaks_used(peaks, request.dtype) if peaks else None,
    )


def wrong_answer(request: RunRequest) -> RunResult:
    tests = [TestResult(index=0, case=request.tests[0], verdict=Verdict.ACCEPTED)]
    tests.append(
        TestResult(index=1, case=request.tests[1], verdict=Verdict.WRONG_ANSWER, message="mismatch at [3]: 4.0 != 5.0")
    )
    return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, message="test 2 failed", tests=tests)


def compile_error(request: RunRequest) -> RunResult:
    return RunResult(
        verdict=Verdict.COMPILE_ERROR,
        mode=request.mode,
        message="kernel.py could not be imported",
        compile_output=(
            "  File \"kernel.py\", line 2\n    return [x + 1 for x in data[0]\nSyntaxError: '[' was never closed\n"
        ),
    )


def launcher(respond=accepted) -> FakeLauncher:
    return FakeLauncher(respond, progress=PROGRESS)


def held(gate: asyncio.Event, respond=accepted) -> FakeLauncher:
    """The fake launcher, its runs held at their testing phase until ``gate`` is set."""
    return FakeLauncher(respond, progress=PROGRESS, hold=gate)
