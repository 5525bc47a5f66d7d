"""The fake launcher, the one every test of the core and the surfaces uses: no process, no GPU; canned, scripted
or derived results, recorded requests, a self-check that can be broken and mended."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Sequence

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
from runners.launchers.base import JobHandle, Launcher, LauncherError
from runners.stats import score, timing_stats

Responder = Callable[[RunRequest], RunResult]
Step = RunResult | BaseException | Callable[[RunRequest, JobHandle], Awaitable[RunResult]]
"""One scripted answer: a result, an exception to raise, or a coroutine function that answers (and may use the job)."""
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


class FakeLauncher(Launcher):
    """Configurable stand-in for a launcher.

    ``respond`` builds the result from the request (default: ``accepted_result``); ``steps`` script the first
    calls instead, one each (``Step``); ``delay_s`` sleeps before answering; ``error`` (or ``errors``, one per call,
    None meaning answer normally) raises ``LauncherError``; ``progress`` events are sent to the job first, and with
    ``hold`` each run then waits until that event is set. Results echo their request as an honest runner's do
    (``echo=False``: as made). ``check_error`` makes ``check`` fail (set it to None to mend it) and ``check_delay_s``
    makes it slow; ``ready`` is what a passing check says. Requests are recorded in ``requests``, the
    remote reference each call found in ``refs_seen``, and a remote reference ``<name>-<n>`` is stored on the job
    (unless ``remote_refs`` is False; an existing one is reused, which ``reattached`` records). ``checks`` counts
    the self-checks.
    """

    allows_unsandboxed: bool = True
    """It runs nothing, so nothing of it needs a sandbox; False makes its results go through the worker's sandbox
    rule like a real runner's (an attribute, not the base's read-only property, so a test may set it)."""

    def __init__(
        self,
        respond: Responder | None = None,
        *,
        name: str = "fake",
        delay_s: float = 0.0,
        error: LauncherError | None = None,
        errors: Sequence[LauncherError | None] = (),
        steps: Sequence[Step] = (),
        progress: Sequence[ProgressEvent] = (ProgressEvent(phase=Phase.TESTING),),
        hold: asyncio.Event | None = None,
        echo: bool = True,
        check_error: BaseException | None = None,
        check_delay_s: float = 0.0,
        ready: str = "",
        allows_unsandboxed: bool = True,
        remote_refs: bool = True,
    ) -> None:
        self.name = name
        self.allows_unsandboxed = allows_unsandboxed
        self.respond = respond or accepted_result
        self.delay_s = delay_s
        self.error = error
        self._errors = list(errors)
        self.steps = list(steps)
        self.progress = list(progress)
        self.hold = hold
        self.echo = echo
        self.check_error = check_error
        self.check_delay_s = check_delay_s
        self.ready = ready or f"{name}: fake launcher, always ready"
        self.remote_refs = remote_refs
        self.requests: list[RunRequest] = []
        self.refs_seen: list[str | None] = []
        self.reattached: list[str] = []
        self.checks = 0

    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        self.requests.append(request)
        self.refs_seen.append(job.remote_ref)
        if job.remote_ref is not None:
            self.reattached.append(job.remote_ref)
        elif self.remote_refs:
            await job.set_remote_ref(f"{self.name}-{next(_ids)}")
        for event in self.progress:
            await job.progress(event)
        if self.hold is not None:
            await self.hold.wait()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        error = self._errors.pop(0) if self._errors else self.error
        if error is not None:
            raise error
        step = self.steps.pop(0) if self.steps else None
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, RunResult):
            result = step
        elif step is not None:
            result = await step(request, job)
        else:
            result = self.respond(request)
        if self.echo and not result.request_sha256:  # an honest runner echoes its request (a test may set others)
            result = result.model_copy(update={"request_sha256": request.digest(), "nonce": request.nonce})
        return result

    async def check(self) -> str:
        self.checks += 1
        if self.check_delay_s:
            await asyncio.sleep(self.check_delay_s)
        if self.check_error is not None:
            raise self.check_error
        return self.ready
