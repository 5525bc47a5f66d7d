"""A fake launcher for tests of the core: no process, no GPU; canned or derived results, recorded requests."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence

from runners.contract import (
    BenchmarkResult,
    Mode,
    Phase,
    ProgressEvent,
    RunRequest,
    RunResult,
    TestResult,
    TimingStats,
    Verdict,
)
from runners.launchers.base import JobHandle, LauncherError
from runners.stats import score, timing_stats

Responder = Callable[[RunRequest], RunResult]
_ids = itertools.count(1)


def accepted_result(request: RunRequest, median_ns: float = 1000.0) -> RunResult:
    """What a correct submission would get: every test accepted, every benchmark timed at ``median_ns``."""
    tests = [TestResult(index=i, case=c, verdict=Verdict.ACCEPTED) for i, c in enumerate(request.tests)]
    benches: list[BenchmarkResult] = []
    if request.mode in (Mode.BENCHMARK, Mode.RANKED):
        stats: TimingStats = timing_stats([median_ns * f for f in (0.99, 1.0, 1.01)])
        benches = [
            BenchmarkResult(index=i, case=c, verdict=Verdict.ACCEPTED, stats=stats)
            for i, c in enumerate(request.benchmarks)
        ]
    medians = [b.stats.median_ns for b in benches if b.stats]
    return RunResult(
        verdict=Verdict.ACCEPTED,
        message="accepted (fake launcher)",
        mode=request.mode,
        tests=tests,
        benchmarks=benches,
        score_ns=score(medians, request.ranking_by) if medians else None,
        profile="fake profile" if request.mode is Mode.PROFILE else None,
    )


def verdict_result(verdict: Verdict, message: str = "") -> Responder:
    """A responder that answers every request with ``verdict``."""

    def respond(request: RunRequest) -> RunResult:
        if verdict is Verdict.ACCEPTED:
            return accepted_result(request)
        return RunResult(verdict=verdict, message=message or verdict.label, mode=request.mode)

    return respond


class FakeLauncher:
    """Configurable stand-in for a launcher.

    ``respond`` builds the result from the request (default: ``accepted_result``); ``delay_s`` sleeps
    before answering; ``error`` (or ``errors``, one per call, None meaning answer normally) raises
    ``LauncherError``; ``progress`` events are sent to the job first. Requests are recorded in
    ``requests``, and a remote reference ``fake-<n>`` is stored on the job (or the existing one reused,
    which ``reattached`` records).
    """

    def __init__(
        self,
        respond: Responder | None = None,
        *,
        name: str = "fake",
        delay_s: float = 0.0,
        error: LauncherError | None = None,
        errors: Sequence[LauncherError | None] = (),
        progress: Sequence[ProgressEvent] = (ProgressEvent(phase=Phase.TESTING),),
        check_error: LauncherError | None = None,
        allows_unsandboxed: bool = True,
    ) -> None:
        self.name = name
        self.allows_unsandboxed = allows_unsandboxed
        """It runs nothing, so nothing of it needs a sandbox; False makes its results go through the worker's
        sandbox rule like a real runner's."""
        self.respond = respond or accepted_result
        self.delay_s = delay_s
        self.error = error
        self._errors = list(errors)
        self.progress = list(progress)
        self.check_error = check_error
        self.requests: list[RunRequest] = []
        self.reattached: list[str] = []

    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        self.requests.append(request)
        if job.remote_ref is not None:
            self.reattached.append(job.remote_ref)
        else:
            await job.set_remote_ref(f"{self.name}-{next(_ids)}")
        for event in self.progress:
            await job.progress(event)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        error = self._errors.pop(0) if self._errors else self.error
        if error is not None:
            raise error
        result = self.respond(request)
        if not result.request_sha256:  # an honest runner echoes its request (a test may set other values)
            result = result.model_copy(update={"request_sha256": request.digest(), "nonce": request.nonce})
        return result

    async def check(self) -> str:
        if self.check_error is not None:
            raise self.check_error
        return f"{self.name}: fake launcher, always ready"
