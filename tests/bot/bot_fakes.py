"""A launcher for the bot's tests: derives a result from the request without running anything.

It follows the Launcher protocol of ``runners/launchers/base.py``; ``gate`` holds a run after its
progress events so a test can look at the live status while the job is under way.
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
from runners.launchers.base import JobHandle

MEDIAN_NS = 12_500.0


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
        )
        benches = [
            BenchmarkResult(index=i, case=c, verdict=Verdict.ACCEPTED, stats=stats, bytes_moved=20_000_000)
            for i, c in enumerate(request.benchmarks)
        ]
    now = datetime.now(UTC)
    return RunResult(
        verdict=Verdict.ACCEPTED,
        mode=request.mode,
        tests=tests,
        benchmarks=benches,
        score_ns=median_ns if benches else None,
        stdout="hello from the kernel\n",
        started_at=now,
        finished_at=now,
    )


def wrong_answer(request: RunRequest) -> RunResult:
    tests = [TestResult(index=0, case=request.tests[0], verdict=Verdict.ACCEPTED)]
    tests.append(
        TestResult(index=1, case=request.tests[1], verdict=Verdict.WRONG_ANSWER, message="mismatch at [3]: 4.0 != 5.0")
    )
    return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, message="test 2 failed", tests=tests)


class FakeLauncher:
    name = "fake"

    def __init__(self, make=accepted, *, gate: asyncio.Event | None = None) -> None:
        self.make = make
        self.gate = gate
        self.requests: list[RunRequest] = []

    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        self.requests.append(request)
        await job.progress(ProgressEvent(phase=Phase.COMPILING))
        await job.progress(ProgressEvent(phase=Phase.TESTING, detail=f"{len(request.tests)} tests"))
        if self.gate is not None:
            await self.gate.wait()
        return self.make(request)

    async def check(self) -> str:
        return "fake launcher: ready"
