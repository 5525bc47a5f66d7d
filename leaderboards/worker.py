"""The worker loop: claim a job, run it through its device's launcher, store exactly one result per run kind.

One ``Worker`` serves ``concurrency`` jobs at a time on one event loop. For each job it

1. claims it (``JobQueue.claim``: a lease with a token unique to this claim);
2. asks the service for the job's run requests (``WorkerService.run_requests``: the public run, and for ranked
   jobs the secret-seed run; kinds an earlier attempt already stored are skipped);
3. hands each request to the launcher for the job's device with a ``QueueJobHandle`` (progress events go to
   ``job_events``, the remote reference is stored on the job so a later attempt re-attaches to it), bounded by the
   request's own limits plus a margin;
4. stores each result with ``WorkerService.record_run(owner=token)`` — the lease is checked on the locked row in
   the same transaction — and completes the job in the transaction of its last run.

Heartbeats renew every held lease; a lease found lost (expired and taken over, or the job cancelled) aborts the
job at once and nothing of it is stored. Infrastructure failures (``LauncherError``, an ``infrastructure_error``
verdict, a launcher that crashed or overran its bound) go back to the queue with exponential backoff until the
job's ``max_attempts``; a user's failure (compile error, wrong answer, timeout, …) is a stored result and is never
retried. In ranked mode the secret run is skipped when the public run failed: it could not make the submission
eligible.

The worker knows the service only through ``WorkerService``, the few calls above (``LeaderboardService`` is one).
Blocking database calls run on the worker's own small thread pool, never on the event loop and never on the
default executor that launchers use for their own blocking work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.exc import DBAPIError

from leaderboards.board_hacks import HackRunner
from leaderboards.errors import LeaseLost
from leaderboards.formatting import verdict_words
from leaderboards.holdout import SystemTestRunner
from leaderboards.models import JobStatus, utcnow
from leaderboards.queue import (
    PREEMPT_MAX,
    PROGRAM_RESERVE_SHARE,
    STORE_TRIES,
    Claim,
    JobQueue,
    new_worker_id,
    transient_db_error,
    with_db_retry,
)
from leaderboards.rejudge import RejudgeRunner
from leaderboards.results import PlannedRun, RecordedRun
from leaderboards.retiming import RetimeRunner
from leaderboards.spool import ResultSpool
from runners.compare import Tally, round_text, schedule
from runners.compare_profile import metric_deltas, profile_requests
from runners.contract import Comparison, ComparisonMetrics, Mode, Phase, ProgressEvent, RunRequest, RunResult, Verdict
from runners.durations import format_ns
from runners.launchers.base import DeviceUnavailable, Launcher, LauncherError

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from leaderboards.db import Database

log = logging.getLogger(__name__)

T = TypeVar("T")

PREEMPT_KILL_WAIT_S = 10.0
"""After a preemption, how long the slot waits for the killed program run's task to end (its launcher's cancel path:
the local sandbox kills the process tree in ~0.1 s; Modal and GitHub ask their API to cancel, seconds) before it
launches the person's job, so the two runs do not share the GPU. Bounded, so a cancel that hangs delays the person
by no more than this (and never by more than a quarter of the lease, which is not heartbeated while it waits)."""


class WorkerService(Protocol):
    """What a worker uses of the service (``LeaderboardService`` is one): the database its queue and the
    transaction of a stored run live in, the clock, a job's run requests, storing a run, and whether a job's
    public run failed."""

    @property
    def db(self) -> Database: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    def run_requests(self, job_id: int) -> Sequence[PlannedRun]: ...

    def record_run(
        self,
        job_id: int,
        result: RunResult,
        *,
        secret: bool = ...,
        owner: str | None = ...,
        session: Session | None = ...,
    ) -> RecordedRun: ...

    def public_run_failed(self, job_id: int) -> str | None: ...

    def record_comparison(
        self, job_id: int, comparison: Comparison, *, owner: str | None = ..., session: Session | None = ...
    ) -> bool: ...


LauncherFor = Callable[[str], Launcher]
"""Device name -> its launcher (``runners.routing.Router.launcher_for``); may raise ``LauncherError``."""

MAX_EVENTS_PER_RUN = 200
"""Progress events stored per run; a chatty launcher cannot flood ``job_events``."""


class WorkerSettings(BaseSettings):
    """How a worker serves the queue (env prefix ``KERNELCUP_WORKER_``)."""

    model_config = SettingsConfigDict(env_prefix="KERNELCUP_WORKER_", extra="ignore")

    concurrency: int = Field(default=1, ge=1, le=256, description="Jobs served at once by one worker process.")
    program_reserve_share: float = Field(
        default=PROGRAM_RESERVE_SHARE,
        ge=0,
        le=1,
        description="The program lane: a program account's job starts on a device only while this share of the live "
        "worker processes serving it (rounded up, at most all but one) stays idle for people after it (0: no lane). "
        "docs/queue.md.",
    )
    max_preemptions: int = Field(
        default=PREEMPT_MAX,
        ge=0,
        le=100,
        description="Preemption: while people's jobs wait on a device and no worker serving it is idle, a worker "
        "running a program account's job kills that run, puts the job back in the queue (not counted as an attempt) "
        "and runs the person's job instead; one program job at most this many times, then it runs to its end "
        "(0: never). docs/queue.md.",
    )
    lease_s: float = Field(default=60.0, gt=0, description="Lease of a claimed job; renewed by heartbeats.")
    heartbeat_s: float = Field(default=10.0, gt=0, description="Interval of lease and liveness heartbeats.")
    poll_s: float = Field(default=0.1, gt=0, description="How often an idle worker looks for a job.")
    backoff_base_s: float = Field(default=5.0, ge=0, description="First retry delay after an infrastructure failure.")
    backoff_max_s: float = Field(default=300.0, ge=0, description="Longest retry delay (the backoff doubles up to it).")
    launch_margin_s: float = Field(
        default=120.0, gt=0, description="Added to a request's compile + run limits to bound one launcher call."
    )
    stop_grace_s: float = Field(
        default=30.0, ge=0, description="On SIGTERM/SIGINT, how long running jobs may finish before they are requeued."
    )
    db_retry_s: float = Field(default=60.0, gt=0, description="How long a database call is retried while unreachable.")
    unhealthy_after: int = Field(
        default=3,
        ge=1,
        description="Infrastructure failures in a row after which a worker stops claiming and probes its runner.",
    )
    probe_s: float = Field(default=30.0, gt=0, description="How often an unhealthy worker probes its runner again.")
    probe_timeout_s: float = Field(default=60.0, gt=0, description="Bound of one probe of a launcher (its check).")
    sweep_s: float = Field(
        default=600.0,
        gt=0,
        description="How often the housekeeping runs: stale job folders and cgroups of dead runs are swept, and "
        "the deadlines' work is done (system tests queued, final standings frozen); it also runs early (at most "
        "once per 30 s) when a system test or re-timing round ends.",
    )
    spool_dir: Path | None = Field(
        default=None,
        description="Where finished results wait until the database has them (default: spool/ in the data directory).",
    )

    def resolved_spool_dir(self, data_dir: Path) -> Path:
        return self.spool_dir.expanduser() if self.spool_dir is not None else data_dir / "spool"

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> WorkerSettings:
        if self.heartbeat_s >= self.lease_s / 2:
            raise ValueError(
                f"heartbeat_s ({self.heartbeat_s:g}) must be under half of lease_s ({self.lease_s:g}) so a live "
                "worker renews its lease before it expires (set KERNELCUP_WORKER_HEARTBEAT_S or _LEASE_S)"
            )
        return self


class InfrastructureFailure(Exception):
    """A failure that is not the submission's fault: the job is retried (bounded) or failed as not your fault."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out


class ProblemFault(Exception):
    """The problem's own code failed (``RunResult.fault`` "problem": its generate_input, check or speed of light):
    every attempt would fail the same way, so the job fails at once, and the worker, whose runner works, is not to
    blame (an infrastructure failure counts towards marking it unhealthy)."""


@dataclass(frozen=True)
class JobReport:
    """What one claimed job came to, for logs, tests and benchmarks."""

    job_id: int
    status: str
    recorded: tuple[RecordedRun, ...] = ()
    message: str = ""


HOUSEKEEP_GAP_S = 30.0
"""After a system test or re-timing round ends, the housekeeping runs early, but at most once per this many seconds
since its last pass: a deadline's wave of them costs a pass every 30 s, not one per item (each pass locks the rows
of the boards past their deadline)."""
ONCE_HOUSEKEEPING_PASSES = 5
"""With ``run(once=True)``: how many end-of-run housekeeping passes (each followed by serving what it queued) at most;
a board's end takes three (system tests, re-timing rounds, the freeze)."""


def launch_timeout_s(request: RunRequest, margin_s: float, launcher: Launcher | None = None) -> float:
    """The bound of one launcher call: the runner's own compile and run limits, plus a start-up/transfer margin.

    A remote launcher that may legitimately wait longer (a Modal cold start, a GitHub queue) says so in its
    ``wait_margin_s``; the bound then grows to it, so a slow start does not cost the job a retry.
    """
    margin = max(margin_s, launcher.wait_margin_s if launcher is not None else 0.0)
    return request.time_limit_s() + margin


class QueueJobHandle:
    """The ``JobHandle`` a launcher gets: remote reference and progress go to the job's row and events."""

    def __init__(self, worker: Worker, claim: Claim, remote_ref: str | None) -> None:
        self._worker = worker
        self._claim = claim
        self._ref = remote_ref
        self._events = 0
        self._last: tuple[str, str] | None = None

    @property
    def remote_ref(self) -> str | None:
        return self._ref

    async def set_remote_ref(self, ref: str) -> None:
        await self._worker._db(self._worker.queue.set_remote_ref, self._claim, ref)
        self._ref = ref

    async def progress(self, event: ProgressEvent) -> None:
        key = (event.phase.value, event.detail)
        if key == self._last or self._events >= MAX_EVENTS_PER_RUN or event.phase is Phase.DONE:
            return  # the worker writes "done" itself, once the result is stored
        self._last = key
        self._events += 1
        try:
            await self._worker._db(self._worker.queue.add_event, self._claim, event.phase.value, event.detail)
        except Exception:  # progress must never break a run
            log.exception("could not store a progress event of job %s", self._claim.job_id)


class Worker:
    """Serves jobs from the queue. Build it with the service and a device->launcher function; ``run`` it.

    ``housekeeping`` (optional, blocking) runs on a thread at start, every ``sweep_s``, and soon after a system test
    or re-timing round ends (the competition's end waits on it): the composition root passes the sweep of stale job
    folders and cgroups (``runners.cleanup``) and the deadline's work (``competition_tick``). What it returns, when a
    list of lines (what it did), is logged; with ``run(once=True)`` it runs again at the end, serving what it queued,
    until it does nothing.
    """

    def __init__(
        self,
        service: WorkerService,
        launcher_for: LauncherFor,
        settings: WorkerSettings,
        *,
        devices: Sequence[str] = (),
        worker_id: str | None = None,
        submission_id: int | None = None,
        queue: JobQueue | None = None,
        housekeeping: Callable[[], object] | None = None,
        spool: ResultSpool | None = None,
        system_tests: SystemTestRunner | None = None,
        rejudges: RejudgeRunner | None = None,
        retimings: RetimeRunner | None = None,
        hacks: HackRunner | None = None,
    ) -> None:
        self.service = service
        self.system_tests = system_tests
        """Run when no job is runnable (issue 29): system tests wait below everyone's submissions."""
        self.retimings = retimings
        """Run when neither a job nor a system test is runnable: the finalists' re-timing rounds (before rejudges)."""
        self.rejudges = rejudges
        """Run when neither a job nor a system test is runnable: rejudges wait below both."""
        self.hacks = hacks
        """Input hacks (issue 35): run when no job is runnable, after system tests."""
        self.launcher_for = launcher_for
        self.settings = settings
        self.devices = tuple(devices)
        self.worker_id = worker_id or new_worker_id()
        self.submission_id = submission_id
        self.queue = queue or JobQueue(
            service.db,
            # Leases run on the database's clock, not this host's (``JobQueue.now``); a test's simulated clock on the
            # service stands in for it.
            clock=None if service.clock is utcnow else service.clock,
            db_retry_s=self.settings.db_retry_s,
            program_reserve_share=self.settings.program_reserve_share,
            max_preemptions=self.settings.max_preemptions,
        )
        self.housekeeping = housekeeping
        self.spool = spool if spool is not None else ResultSpool(self.settings.spool_dir)
        self.reports: list[JobReport] = []
        self.launches = 0
        """Launcher calls started (a benchmark compares them with the runs stored)."""
        self._held: dict[int, tuple[Claim, asyncio.Task[Any]]] = {}
        self._storing: set[int] = set()  # jobs whose result is being committed: never cancelled then
        self._why_cancelled: dict[int, str] = {}
        self._yielding: dict[int, asyncio.Future[bool]] = {}  # program jobs whose preemption is being decided
        self._preempted: set[int] = set()  # jobs given up for a person's: their killed runs end in the background
        self._dying: set[asyncio.Task[Any]] = set()
        self.housekeep_gap_s = HOUSEKEEP_GAP_S
        """The least time between two housekeeping passes when an item's end wakes it early (tests shorten it)."""
        self.preempt_kill_wait_s = PREEMPT_KILL_WAIT_S
        """The bound on waiting for a preempted run's kill before the person's run starts (tests shorten it)."""
        self._busy: list[str] = []  # work besides jobs running now (``workers.busy_with``): one label per item
        self._busy_lock = threading.Lock()  # writes of it go out in order, each with the list as it is then
        self._pool: ThreadPoolExecutor | None = None
        self._wake = asyncio.Event()
        self._housekeep_now = asyncio.Event()  # an idle item ended: the competition's end may be due
        self._closing = threading.Event()  # set when the worker stops: endless database retries give up
        if queue is None:  # its own queue: a stop at once (a second signal) cuts its database retries short too
            self.queue.until = self._closing
        self._failed_jobs: set[int] = set()  # distinct jobs that failed in a row on this worker
        self._unhealthy: str | None = None
        self._suspects: dict[str, Launcher] = {}
        self._recovering: asyncio.Lock | None = None

    # -- plumbing ---------------------------------------------------------------------------------------------------

    async def _db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.settings.concurrency + 3, thread_name_prefix="kc-db")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    def wake(self) -> None:
        """Look for a job now instead of at the next poll (same event loop only)."""
        self._wake.set()

    @property
    def healthy(self) -> bool:
        return self._unhealthy is None

    # -- the loop ---------------------------------------------------------------------------------------------------

    async def run(
        self,
        stop: asyncio.Event | None = None,
        *,
        once: bool = False,
        until: Callable[[], bool] | None = None,
    ) -> list[JobReport]:
        """Serve jobs until ``stop`` is set (or, with ``once``, until the queue has nothing for us; or until
        ``until()`` is true). On stop, running jobs get ``stop_grace_s`` to finish, then they are killed and go
        back to the queue. A database that cannot be reached is waited for, never a reason to exit."""
        stop = stop or asyncio.Event()
        self._closing.clear()
        self._recovering = asyncio.Lock()
        if not await self._register(stop):
            return self.reports
        background = [asyncio.create_task(self._heartbeats(stop), name="kc-heartbeat")]
        if not once:  # (once: its passes run in order, before and after the slots)
            background.append(asyncio.create_task(self._housekeeping(stop), name="kc-housekeeping"))
        slots: list[asyncio.Task[None]] = []
        try:
            await self._store_spooled()
            await self._self_check()
            passes = ONCE_HOUSEKEEPING_PASSES if once and self.housekeeping is not None else 0
            if passes and not stop.is_set():
                await self._housekeep()
            await self._run_slots(slots, stop, once, until)
            for _ in range(passes):  # once: serve what each pass queued, until a pass does nothing
                if stop.is_set() or (until is not None and until()) or not await self._housekeep():
                    break
                await self._run_slots(slots, stop, once, until)
        finally:
            self._closing.set()
            for task in slots:
                task.cancel()
            await asyncio.gather(*slots, return_exceptions=True)  # each slot kills its job's run as it ends
            await asyncio.gather(*self._dying, return_exceptions=True)  # preempted runs still being killed
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._db(self.queue.stop_worker, self.worker_id), 5)
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
        return self.reports

    async def _run_slots(
        self, slots: list[asyncio.Task[None]], stop: asyncio.Event, once: bool, until: Callable[[], bool] | None
    ) -> None:
        """Start ``concurrency`` slots (added to ``slots``, which ``run`` lets go of as it ends) and wait for them.
        ``wait``, not ``gather``: a task awaiting ``gather`` that is cancelled (a stop at once, the second signal) gets
        its CancelledError only once every slot has ended, so ``run``'s ``_closing`` would wait for their runs'
        clean-ups; ``wait`` lets it through at once. A slot's error still ends the run."""
        serving = [
            asyncio.create_task(self._slot(stop, once, until), name=f"kc-slot-{len(slots) + i}")
            for i in range(self.settings.concurrency)
        ]
        slots += serving
        done, _ = await asyncio.wait(serving, return_when=asyncio.FIRST_EXCEPTION)
        for finished in done:
            finished.result()

    async def _register(self, stop: asyncio.Event) -> bool:
        """Register in the ``workers`` table, waiting for the database as long as it takes (False: stopped)."""
        delay = 1.0
        while not stop.is_set():
            try:
                await self._db(self.queue.register_worker, self.worker_id, self.devices)
                return True
            except Exception as exc:
                log.warning("cannot reach the database to register (%s); trying again in %.0f s", _why(exc), delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
            delay = min(delay * 2, 30.0)
        return False

    async def _slot(self, stop: asyncio.Event, once: bool, until: Callable[[], bool] | None) -> None:
        claim: Claim | None = None  # a person's job taken in a preempted program job's place: run next, unclaimed
        try:
            while not stop.is_set() and not (until is not None and until()):
                if claim is None:
                    if not self.healthy:
                        if once:
                            return  # nothing this worker can serve now
                        await self._recover(stop)
                        continue
                    try:
                        claim = await self._db(
                            self.queue.claim,
                            self.worker_id,
                            lease_s=self.settings.lease_s,
                            devices=self.devices,
                            submission_id=self.submission_id,
                        )
                    except Exception as exc:
                        log.warning("claiming a job failed (%s); trying again shortly", _why(exc))
                        claim = None
                    if claim is None:
                        if await self._system_test():
                            continue
                        if once:
                            return
                        await self._idle(stop)
                        continue
                current, claim = claim, None
                task = asyncio.create_task(self.process(current), name=f"kc-job-{current.job_id}")
                self._held[current.job_id] = (current, task)
                try:
                    claim = await self._serve(current, task, stop)
                except asyncio.CancelledError:  # stopped at once (a second signal): kill the run before letting go
                    self._why_cancelled.setdefault(current.job_id, "the worker was stopped at once")
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    raise
                finally:
                    self._held.pop(current.job_id, None)
        finally:
            if claim is not None:  # taken by a preemption as the worker stopped: back to the queue, uncounted
                await asyncio.shield(self._release_quietly(claim, "the worker stopped"))

    async def _serve(self, claim: Claim, task: asyncio.Task[Any], stop: asyncio.Event) -> Claim | None:
        """Wait for the job's task to end (or for the worker to stop). A program's job is looked at every poll
        while it runs: when a person's job waits and no worker is idle for it, the program's run is killed and
        the person's job, already claimed for this slot in the same transaction, is returned to run next."""
        if claim.program and self.queue.max_preemptions > 0 and self.submission_id is None:
            stopping = asyncio.ensure_future(stop.wait())
            try:
                while not task.done() and not stopping.done():
                    await asyncio.wait(
                        [task, stopping], timeout=self.settings.poll_s, return_when=asyncio.FIRST_COMPLETED
                    )
                    if task.done() or stopping.done():
                        break
                    taken = await self._preempt(claim, task)
                    if taken is not None:
                        await self._let_go(task, stopping)
                        return taken
            finally:
                stopping.cancel()
        await self._until_done_or_stopped(task, stop)
        return None

    async def _preempt(self, claim: Claim, task: asyncio.Task[Any]) -> Claim | None:
        """Give ``claim``'s program job up for a person's if the queue says so (``JobQueue.preempt_for_person``):
        kill its run in the background (the launcher's cancel path) and return the person's job's claim."""
        if claim.job_id in self._storing or task.done() or len(self._held) < self.settings.concurrency:
            return None  # its result is being stored: never given up then; a free slot here takes people itself
        gate: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._yielding[claim.job_id] = gate  # a result finishing meanwhile waits for the decision (``_may_store``)
        preemption = None
        try:
            preemption = await self._db(
                self.queue.preempt_for_person, self.worker_id, [claim], lease_s=self.settings.lease_s
            )
        except Exception as exc:
            log.warning("could not look for people waiting behind job %s (%s)", claim.job_id, _why(exc))
        finally:
            self._yielding.pop(claim.job_id, None)
            gate.set_result(preemption is not None)
        if preemption is None:
            return None
        why = (
            f"preempted ({preemption.count}/{self.queue.max_preemptions}) for a person's job "
            f"(job {preemption.claim.job_id} runs in its place)"
        )
        log.info("job %s (%s): %s", claim.job_id, claim.device, why)
        self._why_cancelled[claim.job_id] = why
        self._preempted.add(claim.job_id)
        self._dying.add(task)
        task.add_done_callback(self._dying.discard)
        if not task.cancelling():  # once: a second cancel would cut short its note that it was killed
            task.cancel(msg="preempted")
        return preemption.claim

    async def _let_go(self, task: asyncio.Task[Any], stopping: asyncio.Future[Any]) -> None:
        """Wait for a preempted run's task to end (its run killed through the launcher's cancel path, its report
        written) before the person's run is launched in its place, so they never hold the device together; at
        most ``preempt_kill_wait_s`` (and a quarter of the lease), or until the worker stops."""
        bound = min(self.preempt_kill_wait_s, self.settings.lease_s / 4)
        started = asyncio.get_running_loop().time()
        await asyncio.wait([task, stopping], timeout=bound, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            waited = asyncio.get_running_loop().time() - started
            log.warning(
                "job %s: the preempted run was not killed within %.1f s; starting the person's job anyway",
                _job_of(task),
                waited,
            )

    async def _may_store(self, claim: Claim) -> None:
        """Before a result is stored: wait while the job's preemption is being decided; ``LeaseLost`` if it was
        preempted (its finished run is dropped like a killed one, and runs again). Add the job to ``_storing``
        right after this, with no await between, so no preemption starts while it stores."""
        while (gate := self._yielding.get(claim.job_id)) is not None:
            if await asyncio.shield(gate):
                raise LeaseLost(claim.job_id, claim.owner)

    async def _system_test(self) -> bool:
        """Run one system test, else one re-timing round, else one rejudge, if there is one (never on a worker that
        serves one submission); False otherwise."""
        if self.submission_id is not None:
            return False
        idle: tuple[tuple[str, SystemTestRunner | HackRunner | RetimeRunner | RejudgeRunner | None], ...] = (
            ("system test", self.system_tests),
            ("input hack", self.hacks),
            ("re-timing round", self.retimings),
            ("rejudge", self.rejudges),
        )
        for what, runner in idle:
            if runner is None:
                continue
            try:
                if await self._run_idle_item(what, runner):
                    if what in ("system test", "re-timing round"):  # a board's last may have ended: its freeze is due
                        self._housekeep_now.set()
                    return True
            except Exception as exc:
                log.warning("a %s could not be claimed or stored (%s)", what, _why(exc))
        return False

    async def _run_idle_item(
        self, what: str, runner: SystemTestRunner | HackRunner | RetimeRunner | RejudgeRunner
    ) -> bool:
        """``runner.run_one``, recording on the worker's row (``busy_with``) that this place is busy while the item
        it claimed runs: the runners claim with their first database call, so when that call finds work, the
        label is written before the work starts, and removed when it ends (however it ends)."""
        claimed: list[bool] = []

        async def db(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
            result = await self._db(fn, *args, **kwargs)
            if not claimed:
                claimed.append(bool(result))
                if result:
                    await self._set_busy(what, True)
            return result

        try:
            return await runner.run_one(self.worker_id, self.devices, db)
        finally:
            if claimed and claimed[0]:
                await asyncio.shield(self._set_busy(what, False))

    async def _set_busy(self, what: str, busy: bool) -> None:
        """Add or remove one item of work besides jobs (``what``) and write the worker's ``busy_with`` (a failed
        write is logged; the next heartbeat writes it again)."""
        if busy:
            self._busy.append(what)
        elif what in self._busy:
            self._busy.remove(what)
        try:
            await self._db(self._write_busy)
        except Exception as exc:
            log.warning("could not record on the worker's row that it runs a %s (%s)", what, _why(exc))

    def _write_busy(self, *, beat: bool = False) -> None:
        """Write ``busy_with`` as the list is when the write runs (under a lock, so writes from several threads end
        with the latest list); with ``beat``, as part of the worker's heartbeat."""
        with self._busy_lock:
            if beat:
                self.queue.worker_heartbeat(self.worker_id, busy=list(self._busy))
            else:
                self.queue.set_worker_busy(self.worker_id, list(self._busy))

    async def _idle(self, stop: asyncio.Event, timeout_s: float | None = None) -> None:
        self._wake.clear()
        await _first_set(stop, self._wake, timeout_s=timeout_s or self.settings.poll_s)

    async def _until_done_or_stopped(self, task: asyncio.Task[Any], stop: asyncio.Event) -> None:
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([task, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if not task.done():  # asked to stop: let the job finish within the grace period, then kill and requeue it
            done, _ = await asyncio.wait([task], timeout=self.settings.stop_grace_s)
            if not done:
                self._why_cancelled.setdefault(_job_of(task), "the worker stopped (grace period over)")
                task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _heartbeats(self, stop: asyncio.Event) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_s)
            try:
                await self._db(self._write_busy, beat=True)  # alive, and what it runs besides jobs
            except Exception as exc:
                log.warning("worker heartbeat failed (%s)", _why(exc))
            for job_id, (claim, task) in list(self._held.items()):
                try:
                    held = await self._db(self.queue.heartbeat, claim, lease_s=self.settings.lease_s)
                except Exception as exc:
                    log.warning("lease heartbeat of job %s failed (%s); trying again next beat", job_id, _why(exc))
                    continue
                deciding = job_id in self._yielding or job_id not in self._held  # a preemption kills it, if any
                deciding = deciding or task in self._dying  # preempted, being killed: a second cancel cuts that short
                deciding = deciding or task.cancelling() > 0  # killed already (the stop path): giving the job back
                if not held and not task.done() and job_id not in self._storing and not deciding:
                    log.warning(
                        "lost the lease of job %s (cancelled, or expired and taken over); killing its run", job_id
                    )
                    self._why_cancelled.setdefault(job_id, "the worker lost the job's lease")
                    task.cancel(msg="lease lost")

    async def _housekeeping(self, stop: asyncio.Event) -> None:
        if self.housekeeping is None:
            return
        while not stop.is_set():
            self._housekeep_now.clear()
            last = asyncio.get_running_loop().time()
            await self._housekeep()
            await _first_set(stop, self._housekeep_now, timeout_s=self.settings.sweep_s)
            if self._housekeep_now.is_set():  # woken by an item's end: at most one early pass per gap
                gap = self.housekeep_gap_s - (asyncio.get_running_loop().time() - last)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), max(0.0, gap))

    async def _housekeep(self) -> bool:
        """One pass of ``housekeeping`` on a thread, its lines logged; whether it said it did something."""
        assert self.housekeeping is not None
        try:
            done = await asyncio.to_thread(self.housekeeping)
        except Exception:
            log.exception("housekeeping (sweeping stale job folders and cgroups, the deadlines' work) failed")
            return False
        lines = [str(line) for line in done] if isinstance(done, list) else []
        for line in lines:
            log.info("%s", line)
        return bool(lines)

    # -- health -----------------------------------------------------------------------------------------------------

    async def _probe(self, launcher: Launcher) -> str | None:
        """None when ``launcher`` passes its check, else what is wrong."""
        try:
            said = await asyncio.wait_for(launcher.check(), self.settings.probe_timeout_s)
        except TimeoutError:
            return f"the {launcher.name} runner's self-check gave no answer within {self.settings.probe_timeout_s:g} s"
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return f"the {launcher.name} runner fails its self-check: {str(exc) or type(exc).__name__}"
        log.info("worker %s: the %s runner passes its self-check: %s", self.worker_id, launcher.name, said)
        return None

    async def _self_check(self) -> None:
        """Probe the launchers of the devices this worker serves before claiming anything."""
        for device in self.devices:
            try:
                launcher = self.launcher_for(device)
            except Exception:
                continue  # an unrouted device: its jobs fail with the routing message, not the worker's health
            problem = await self._probe(launcher)
            if problem is not None:
                await self._mark_unhealthy(problem, launcher)
                return

    async def _mark_unhealthy(self, problem: str, launcher: Launcher) -> None:
        self._suspects[launcher.name] = launcher
        if self._unhealthy is None:
            log.error("worker %s is unhealthy and stops claiming jobs: %s", self.worker_id, problem)
        self._unhealthy = problem
        try:
            await self._db(self.queue.set_worker_health, self.worker_id, False, problem)
        except Exception as exc:
            log.warning("could not record the worker's health (%s)", _why(exc))

    async def _recover(self, stop: asyncio.Event) -> None:
        """Wait ``probe_s``, probe the runners that failed; healthy again when every one passes."""
        assert self._recovering is not None
        async with self._recovering:
            if self.healthy or stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.settings.probe_s)
            if stop.is_set():
                return
            for launcher in list(self._suspects.values()):
                problem = await self._probe(launcher)
                if problem is not None:
                    await self._mark_unhealthy(problem, launcher)
                    log.warning("worker %s still unhealthy: %s", self.worker_id, problem)
                    return
            log.info("worker %s passes its self-check again; claiming jobs", self.worker_id)
            self._unhealthy = None
            self._failed_jobs.clear()
            self._suspects.clear()
            try:
                await self._db(self.queue.set_worker_health, self.worker_id, True)
            except Exception as exc:
                log.warning("could not record the worker's health (%s)", _why(exc))

    async def _blame(self, claim: Claim, launcher: Launcher | None, reason: str) -> str | None:
        """After an infrastructure failure: is it this worker's? Probe the launcher and count the distinct jobs
        that failed in a row here (one job failing again and again says more about the job); the worker's problem
        (it then stops claiming) or None when the job should be charged as usual."""
        if launcher is None:
            return None
        problem = await self._probe(launcher)
        self._failed_jobs.add(claim.job_id)
        if problem is None and len(self._failed_jobs) >= self.settings.unhealthy_after:
            problem = f"{len(self._failed_jobs)} different jobs in a row failed on this worker (last: {reason})"
        if problem is not None:
            await self._mark_unhealthy(problem, launcher)
        return problem

    # -- one job ----------------------------------------------------------------------------------------------------

    async def process(self, claim: Claim) -> JobReport:
        """Run one claimed job to an end: stored, requeued for a retry, failed, or abandoned (lease lost).

        Never raises for a database outage: the job is then left to its lease (another worker takes it over)."""
        log.info("job %s (%s): attempt %d/%d", claim.job_id, claim.device, claim.attempt, claim.max_attempts)
        try:
            report = await self._process(claim)
        except asyncio.CancelledError:
            why = self._why_cancelled.pop(claim.job_id, "the worker stopped")
            if claim.job_id in self._preempted:  # already back in the queue, its lease revoked: just say so
                self._preempted.discard(claim.job_id)
                await self._settle(self._after_preemption(claim, why))
                raise
            await self._settle(self._after_kill(claim, why))
            raise
        except Exception as exc:
            log.error(
                "job %s: gave up on the database (%s); its lease will expire and it runs again", claim.job_id, exc
            )
            report = JobReport(claim.job_id, "abandoned", message=f"database unreachable: {_why(exc)}")
        self._why_cancelled.pop(claim.job_id, None)
        self._preempted.discard(claim.job_id)  # preempted as its run ended on its own: nothing was killed
        self.reports.append(report)
        log.info("job %s (%s): %s %s", claim.job_id, claim.device, report.status, report.message)
        return report

    async def _settle(self, cleanup: Coroutine[Any, Any, JobReport]) -> None:
        """Carry out a killed run's cleanup (its note, giving the job back) to its end and keep its report, even
        when this task is cancelled again meanwhile (a second signal, a heartbeat that saw the job given back): the
        cleanup is bounded (database calls give up once the worker is closing), and nothing of it is lost."""
        done = asyncio.ensure_future(cleanup)
        while not done.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(done)
        if not done.cancelled() and done.exception() is None:
            self.reports.append(done.result())

    async def _after_kill(self, claim: Claim, why: str) -> JobReport:
        """The job's run was killed (its coroutine cancelled: the launcher killed the process tree or cancelled the
        remote run before letting go). Say so in its events, and give the job back if we still hold it."""
        try:
            await self._db(self.queue.add_note, claim, "killed", f"the run was killed: {why}")
        except Exception as exc:
            log.warning("could not record that job %s was killed (%s)", claim.job_id, _why(exc))
        released = await self._release_quietly(claim, why)
        return JobReport(claim.job_id, "released" if released else "abandoned", message=f"killed: {why}")

    async def _after_preemption(self, claim: Claim, why: str) -> JobReport:
        try:
            await self._db(self.queue.add_note, claim, "killed", f"the run was killed: {why}")
        except Exception as exc:
            log.warning("could not record that job %s was killed (%s)", claim.job_id, _why(exc))
        return JobReport(claim.job_id, "preempted", message=why)

    async def _release_quietly(self, claim: Claim, reason: str = "the worker stopped") -> bool:
        try:
            return await self._db(self.queue.release, claim, reason=reason)
        except Exception as exc:
            log.warning("could not requeue job %s (%s); its lease will expire instead", claim.job_id, _why(exc))
            return False

    async def _process(self, claim: Claim) -> JobReport:
        recorded: list[RecordedRun] = []
        launcher: Launcher | None = None
        try:
            planned = await self._db(self.service.run_requests, claim.job_id)
            if planned and planned[0].against is not None:  # a compare: one item, all its rounds on this worker
                if planned[0].recorded:
                    await self._db(self._complete_only, claim, "")
                    return JobReport(claim.job_id, JobStatus.SUCCEEDED.value, message="completed a stored compare")
                launcher = self.launcher_for(claim.device)
                return await self._compare(launcher, claim, planned[0])
            todo = [p for p in planned if not p.recorded]
            earlier = await self._earlier_failure(claim, planned)
            if earlier is not None or not todo:  # a crash right after storing the last run: just complete
                await self._db(self._complete_only, claim, verdict_words(earlier) if earlier else "")
                return JobReport(claim.job_id, JobStatus.SUCCEEDED.value, message="completed stored runs")
            launcher = self.launcher_for(claim.device)
            ref = claim.remote_ref
            for i, run in enumerate(todo):
                result = await self._launch(launcher, claim, run.request, ref)
                ref = None  # a stored reference belongs to the first run still to do
                final = i == len(todo) - 1 or not result.passed
                await self._may_store(claim)
                self._storing.add(claim.job_id)  # the fence in the transaction decides; a cancel would only lie
                try:
                    rec = await self._store(claim, run.secret, result, final)
                finally:
                    self._storing.discard(claim.job_id)
                recorded.append(rec)
                self._failed_jobs.clear()  # the runner works: whatever the verdict, it was the submission's
                if final:
                    break
            return JobReport(claim.job_id, JobStatus.SUCCEEDED.value, tuple(recorded))
        except LeaseLost as exc:
            log.warning("%s", exc)
            return JobReport(claim.job_id, "lease_lost", tuple(recorded), str(exc))
        except InfrastructureFailure as exc:
            return await self._failed(claim, exc.reason, exc.timed_out, recorded, launcher)
        except ProblemFault as exc:
            self._failed_jobs.clear()  # the runner worked: the problem's code is what failed
            log.error("job %s: the problem's own code failed; fix the problem: %s", claim.job_id, str(exc)[:500])
            reason = f"{exc} (not your submission's fault: the leaderboard's problem needs fixing)"
            return await self._refused(claim, reason, recorded)
        except LauncherError as exc:  # raised before a launch started (e.g. an unrouted device)
            return await self._failed(claim, str(exc) or type(exc).__name__, False, recorded, None)
        except DeviceUnavailable as exc:  # the runner lacks the job's GPU: configuration, so no retry and no blame
            return await self._refused(claim, str(exc), recorded)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if transient_db_error(exc):
                raise  # the database is down: leave the job to its lease, charge nothing (``process``)
            log.exception("job %s failed unexpectedly", claim.job_id)  # a bug of ours or of a launcher
            reason = f"internal error ({type(exc).__name__})"
            if isinstance(exc, DBAPIError):  # an error of the database that does not pass (STORE_TRIES tries)
                code = getattr(exc.orig, "pgcode", None) or getattr(exc.orig, "sqlite_errorname", None)
                reason = (
                    f"internal error: the database refused a write ({type(exc).__name__}{f' {code}' if code else ''})"
                )
            return await self._failed(claim, reason, False, recorded, None)

    async def _compare(self, launcher: Launcher, claim: Claim, plan: PlannedRun) -> JobReport:
        """Run a compare job: up to ``plan.rounds`` rounds of one benchmark run of each file, A B then B A, … (the
        order alternating so a drift of the machine falls on both alike), all here, fewer once the ratio is settled
        (``Tally.settled``); then store the comparison and complete
        the job in one transaction. A retried job starts again from round 1: rounds from two machines would not
        compare. Ends at the first run that fails (its verdict, naming the file, is the comparison's)."""
        assert plan.against is not None
        tally = Tally(plan.request, plan.against)
        comparison: Comparison | None = None
        started = -1
        for rnd, side in schedule(plan.rounds):
            if rnd != started:
                if tally.settled():
                    break  # the ratio is known within runners.compare.PRECISION: more rounds would not change it
                started = rnd
                first = tally.names[0 if rnd % 2 == 0 else 1]
                detail = f"{round_text(rnd + 1, plan.rounds)} ({first} first)"
                try:
                    await self._db(self.queue.add_event, claim, "round", detail)
                except Exception:  # progress must never break a run (the lease and the store are fenced anyway)
                    log.exception("could not store a progress event of job %s", claim.job_id)
            # No remote reference is handed on: each run is a new one (an earlier attempt's is of another round).
            result = await self._launch(launcher, claim, tally.requests[side], None)
            comparison = tally.add(rnd, side, result)
            if comparison is not None:
                break
        comparison = comparison or tally.result()
        if plan.profile and comparison.verdict.passed:
            comparison = comparison.model_copy(update={"metrics": await self._profile_pair(launcher, claim, tally)})
        await self._may_store(claim)
        self._storing.add(claim.job_id)
        path = await asyncio.to_thread(self.spool.put, claim, False, True, comparison)  # kept until stored
        try:
            await self._db(self._record_comparison, claim, comparison)
        except LeaseLost:
            self.spool.remove(path)  # the job is no longer ours: its comparison is not ours to store
            raise
        finally:
            self._storing.discard(claim.job_id)
        self.spool.remove(path)
        self._failed_jobs.clear()  # the runner works: whatever the verdict, it was the files'
        return JobReport(claim.job_id, JobStatus.SUCCEEDED.value, message=comparison.message)

    async def _profile_pair(self, launcher: Launcher, claim: Claim, tally: Tally) -> ComparisonMetrics:
        """A compare that asked for kernel metrics: after the rounds, each case of both files in profile mode on this
        runner (``runners.compare_profile``). A profile run the runner could not make (no ncu: its note; a failure
        of ours) is said in the metrics, never the comparison's verdict: the ratio stands."""
        pairs = profile_requests(*tally.requests)
        results: list[tuple[RunResult, RunResult]] = []
        for i, (a, b) in enumerate(pairs):
            with contextlib.suppress(Exception):  # progress must never break a run
                await self._db(self.queue.add_event, claim, "profiling", f"both files, case {i + 1} of {len(pairs)}")
            got = []
            for request in (a, b):
                try:
                    got.append(await self._launch(launcher, claim, request, None))
                except (InfrastructureFailure, ProblemFault) as exc:
                    got.append(RunResult.infrastructure_error(Mode.PROFILE, str(exc)[:300]))
            results.append((got[0], got[1]))
        return metric_deltas(tally.requests[0].benchmarks, results, tally.names)

    def _record_comparison(self, claim: Claim, comparison: Comparison, retry_s: float | None = None) -> None:
        """Store the comparison and complete the job (fenced by the lease), retried while the database is
        unreachable (``retry_s``; None: until it answers or the worker stops)."""

        def tx() -> None:
            with self.service.db.transaction() as s:
                self.service.record_comparison(claim.job_id, comparison, owner=claim.owner, session=s)
                self.queue.clear_remote_ref(s, claim)
                self.queue.complete(s, claim, detail=compare_detail(comparison))

        try:
            with_db_retry(
                tx,
                budget_s=retry_s,
                what="storing a comparison",
                until=self._closing,
                max_wait_s=5.0,
                persistent_tries=STORE_TRIES,
            )
        except LeaseLost:
            if not with_db_retry(lambda: self.queue.finished_by(claim), budget_s=retry_s, until=self._closing):
                raise

    async def _earlier_failure(self, claim: Claim, planned: Sequence[PlannedRun]) -> str | None:
        """If an earlier attempt stored a failing public run, the job is done: the secret run cannot help."""
        if not any(p.recorded and not p.secret for p in planned):
            return None
        return await self._db(self.service.public_run_failed, claim.job_id)

    async def _failed(
        self, claim: Claim, reason: str, timed_out: bool, recorded: list[RecordedRun], launcher: Launcher | None
    ) -> JobReport:
        problem = await self._blame(claim, launcher, reason)
        if problem is not None:  # the worker's fault: the job goes back uncharged, to a healthy worker
            why = f"worker {self.worker_id} is unhealthy ({problem}); not counted as an attempt"
            released = await self._release_quietly(claim, why)
            return JobReport(claim.job_id, "released" if released else "lease_lost", tuple(recorded), why)
        final = JobStatus.TIMED_OUT if timed_out else JobStatus.FAILED
        try:
            outcome = await self._db(
                self.queue.retry_or_fail,
                claim,
                reason,
                backoff_base_s=self.settings.backoff_base_s,
                backoff_max_s=self.settings.backoff_max_s,
                final_status=final,
            )
        except LeaseLost as exc:
            return JobReport(claim.job_id, "lease_lost", tuple(recorded), str(exc))
        log.warning("job %s: %s", claim.job_id, outcome.message)
        return JobReport(claim.job_id, outcome.status, tuple(recorded), outcome.message)

    async def _refused(self, claim: Claim, reason: str, recorded: list[RecordedRun]) -> JobReport:
        try:
            outcome = await self._db(self.queue.refuse, claim, reason)
        except LeaseLost as exc:
            return JobReport(claim.job_id, "lease_lost", tuple(recorded), str(exc))
        log.warning("job %s (%s): refused: %s", claim.job_id, claim.device, reason)
        return JobReport(claim.job_id, outcome.status, tuple(recorded), outcome.message)

    async def _launch(self, launcher: Launcher, claim: Claim, request: RunRequest, ref: str | None) -> RunResult:
        handle = QueueJobHandle(self, claim, ref)
        bound = launch_timeout_s(request, self.settings.launch_margin_s, launcher)
        self.launches += 1
        try:
            result = await asyncio.wait_for(launcher.run(request, handle), bound)
        except TimeoutError:
            raise InfrastructureFailure(
                f"the {launcher.name} runner gave no result within {bound:.0f} s", timed_out=True
            ) from None
        except LauncherError as exc:
            raise InfrastructureFailure(f"{launcher.name} launcher: {exc}") from exc
        except (LeaseLost, DeviceUnavailable):
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("launcher %s crashed on job %s", launcher.name, claim.job_id)
            raise InfrastructureFailure(f"the {launcher.name} launcher crashed ({type(exc).__name__})") from exc
        if not isinstance(result, RunResult):
            raise InfrastructureFailure(f"the {launcher.name} launcher returned no run result")
        if result.verdict is Verdict.INFRASTRUCTURE_ERROR and result.fault == "problem":
            raise ProblemFault(result.message or "the problem's own code failed")
        if result.verdict is Verdict.INFRASTRUCTURE_ERROR:
            raise InfrastructureFailure(result.message or "the runner reported an infrastructure error")
        problem = result.mismatch(request, allow_unsandboxed=launcher.allows_unsandboxed)
        if problem is not None:
            log.warning("job %s: %s launcher: %s", claim.job_id, launcher.name, problem)
            raise InfrastructureFailure(f"{launcher.name} launcher: {problem}")
        return result

    # -- storing results --------------------------------------------------------------------------------------------

    async def _store(self, claim: Claim, secret: bool, result: RunResult, final: bool) -> RecordedRun:
        """Store a finished run. It is spooled to disk first and kept until the database has it: a database outage
        is waited out (with backoff, as long as the worker runs), never a reason to throw the result away."""
        path = await asyncio.to_thread(self.spool.put, claim, secret, final, result)
        try:
            rec = await self._db(self._record, claim, secret, result, final)
        except LeaseLost:
            self.spool.remove(path)
            raise
        self.spool.remove(path)
        return rec

    async def _store_spooled(self) -> None:
        """Store what a stopped or killed worker on this machine left in the spool (fenced by its old lease)."""
        for item in await asyncio.to_thread(self.spool.pending):
            try:
                if isinstance(item.result, Comparison):
                    await self._db(self._record_comparison, item.claim, item.result, retry_s=self.settings.db_retry_s)
                else:
                    await self._db(
                        self._record, item.claim, item.secret, item.result, item.final, retry_s=self.settings.db_retry_s
                    )
            except LeaseLost:
                log.info("spooled result of job %s: the job was taken over meanwhile; dropped", item.claim.job_id)
            except Exception as exc:
                log.warning("spooled result of job %s not stored yet (%s); kept", item.claim.job_id, _why(exc))
                continue
            else:
                log.info("stored the spooled result of job %s", item.claim.job_id)
            self.spool.remove(item.path)

    def _record(
        self, claim: Claim, secret: bool, result: RunResult, final: bool, retry_s: float | None = None
    ) -> RecordedRun:
        """Store one run (fenced by the lease) and, for the last one, complete the job: one transaction, retried
        while the database is unreachable (``retry_s``; None: until it answers or the worker stops)."""
        db = self.service.db

        def tx() -> RecordedRun:
            with db.transaction() as s:
                rec = self.service.record_run(claim.job_id, result, secret=secret, owner=claim.owner, session=s)
                self.queue.clear_remote_ref(s, claim)
                if final:
                    self.queue.complete(s, claim, detail=_done_detail(rec, result))
                return rec

        try:
            return with_db_retry(
                tx,
                budget_s=retry_s,
                what="storing a result",
                until=self._closing,
                max_wait_s=5.0,
                persistent_tries=STORE_TRIES,
            )
        except LeaseLost:
            # The commit may have gone through although the connection dropped before we heard of it.
            if final and with_db_retry(lambda: self.queue.finished_by(claim), budget_s=retry_s, until=self._closing):
                return RecordedRun(
                    0,
                    claim.job_id,
                    claim.submission_id,
                    claim.device,
                    secret,
                    result.passed,
                    result.verdict.value,
                    result.score_ns,
                    created=False,
                )
            raise

    def _complete_only(self, claim: Claim, verdict: str) -> None:
        with self.service.db.transaction() as s:
            self.queue.complete(s, claim, detail=verdict)


async def _first_set(*events: asyncio.Event, timeout_s: float) -> None:
    """Wait until one of ``events`` is set, or ``timeout_s``."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


def _job_of(task: asyncio.Task[Any]) -> int:
    name = task.get_name()
    return int(name.rsplit("-", 1)[-1]) if name.startswith("kc-job-") else -1


def _why(exc: BaseException) -> str:
    """One line about a (database) error, without SQL or bound parameters."""
    orig = getattr(exc, "orig", None)
    text = " ".join(str(orig or exc).split())
    return f"{type(exc).__name__}: {text[:200]}"


def _done_detail(rec: RecordedRun, result: RunResult) -> str:
    parts = [result.verdict.label]  # (shown on every surface's progress: the verdict in words)
    if rec.score_ns is not None:
        parts.append(f"score {format_ns(rec.score_ns)}")
    if rec.rank is not None:
        parts.append(f"rank {rec.rank}")
    if rec.superseded:
        parts.append("not ranked: the problem changed while it ran (submit it again)")
    return ", ".join(parts)


def compare_detail(comparison: Comparison) -> str:
    """The "done" event of a compare: the verdict, and the overall ratio with its interval."""
    if comparison.ratio is None or comparison.ci_low is None or comparison.ci_high is None:
        return comparison.verdict.label
    return (
        f"{comparison.verdict.label}, {comparison.a}/{comparison.b} time ratio {comparison.ratio:.4f} "
        f"(95% interval {comparison.ci_low:.4f} to {comparison.ci_high:.4f})"
    )
