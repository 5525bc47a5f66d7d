"""System tests (issue 29): the best entries run on the problem's held-out cases.

An admin (``kernelcup leaderboard system-test NAME``, the admin API) or the deadline (``StandingsMixin.
competition_tick``) queues one ``system_tests`` row per entry: the top K of each device's ranking (K per leaderboard,
``SYSTEM_TEST_TOP`` by default). Workers take them only when no job of anyone's is runnable (``Worker`` asks
``SystemTestRunner.run_one`` after an empty claim), so they always wait below people's submissions. Each runs the
entry's ranked file in test mode on the held-out cases (``Problem.system_test_request``, the only request that carries
them) and stores two numbers: how many held-out cases ran and how many passed. Nothing else of the run is kept: no
case, input, output, message or log, so nothing an author or anyone else can read says what the held-out cases are.

Where the problem says so (``holdout_timed: true`` in task.yml) the run is a ranked-mode one that also times the
held-out cases (``Problem.system_test_request``), and a test that passed every case keeps each case's timing statistics
in the cases' order (``timings``, for the final standings, which rank by them with the public benchmarks) and one
figure per entry (``score_ns``: the problem's ranking rule over their medians). Surfaces show that figure and the
counts, never a case or a per-case time.

A system test that could not run (the runner failed, not the entry) goes back to the queue, up to
``SYSTEM_TEST_ATTEMPTS`` claims, then is ``failed`` with an admin-only note; a worker that died holding one leaves it
to its lease.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from leaderboards.db import lease_now
from leaderboards.errors import InvalidChange
from leaderboards.formatting import format_ns
from leaderboards.models import BestScore, Hack, Leaderboard, Rejudge, RetimeRound, Submission, SystemTest, User
from leaderboards.problems import Problem, ProblemFormatError
from leaderboards.queue import store_retried
from leaderboards.recording import RecordingMixin, harness_device
from leaderboards.scoring import aggregate
from leaderboards.snapshot import problem_from_snapshot
from runners.contract import Limits, Mode, RunRequest, RunResult, Verdict
from runners.launchers.base import Launcher, ProgressEvent

log = logging.getLogger(__name__)
T = TypeVar("T")

SYSTEM_TEST_TOP = 10
"""How many entries per device a system test runs when not told otherwise."""
SYSTEM_TEST_ATTEMPTS = 3
LEASE_MARGIN_S = 120.0
"""What a system test's lease adds to its run's time limit (launch, transfer, storing)."""


class SystemTestStatus:
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    """Could not run, not the entry's fault (the runner failed on every attempt): an admin reads the note."""


@dataclass(frozen=True)
class Coverage:
    """An entry's system test as anyone may see it: counts only."""

    device: str
    submission_id: int
    user_name: str
    status: str
    cases: int
    passed: int | None
    score_ns: float | None = None
    """Where the problem times its held-out cases: the problem's rule over their medians (one figure, not a case's)."""

    @property
    def complete(self) -> bool:
        return self.passed is not None and self.passed == self.cases

    @property
    def text(self) -> str:
        return coverage_text(self.passed, self.cases) or f"system test {self.status}"


def coverage_text(passed: int | None, cases: int) -> str | None:
    """An entry's held-out coverage as every surface shows it ("5 of 5 held-out cases"), None before it has run."""
    return None if passed is None else f"{passed} of {cases} held-out cases"


def held_out_text(coverage: str | None, score_ns: float | None) -> str:
    """A standings row's held-out column on every surface: the coverage, and where the problem times its held-out
    cases the entry's one figure over them ("5 of 5 held-out cases, timed 12.3 µs"); '' before its test ran."""
    if coverage is None:
        return ""
    return f"{coverage}, timed {format_ns(score_ns)}" if score_ns is not None else coverage


@dataclass(frozen=True)
class SystemTestsQueued:
    leaderboard: str
    top: int | None
    """How many of each device's best entries were taken (None: every ranked entry, as at the deadline)."""
    cases: int
    entries: tuple[Coverage, ...]


@dataclass(frozen=True)
class SystemTestClaim:
    test_id: int
    token: str
    device: str
    request: RunRequest


def top_entries(s: Session, lb: Leaderboard, device: str, top: int | None) -> list[tuple[BestScore, User]]:
    """The ``top`` best entries of a device's ranking (None: all of them; banned users left out), best first."""
    query = (
        select(BestScore, User)
        .join(User, User.id == BestScore.user_id)
        .where(BestScore.leaderboard_id == lb.id, BestScore.device == device, User.is_banned.is_(False))
        .order_by(BestScore.score, BestScore.submitted_at, BestScore.submission_id)
    )
    rows = s.execute(query if top is None else query.limit(top)).all()
    return [(b, u) for b, u in rows]


def holdout_cases_on(problem: Problem, device: str) -> int:
    """How many held-out cases run on ``device`` (a problem of several ranks runs only those of its world size)."""
    if not problem.task.holdout:
        return 0
    try:
        return len(problem.system_test_request("x", b"", device=harness_device(device), device_name=device).tests)
    except ProblemFormatError:  # none at this device's world size (or no case at all runs there)
        return 0


QueueRow = TypeVar("QueueRow", SystemTest, Rejudge, RetimeRound, Hack)


def oldest_runnable(s: Session, model: type[QueueRow], devices: Sequence[str], now: datetime) -> QueueRow | None:
    """The oldest row of a queue below the jobs (``system_tests``, ``rejudges``, ``hacks``) a worker for ``devices``
    (all when empty) may take: queued, or running with its lease run out; locked, skipping rows another worker holds."""
    runnable = or_(model.status == "queued", and_(model.status == "running", model.lease_expires_at < now))
    stmt = select(model).where(runnable)
    if devices:
        stmt = stmt.where(model.device.in_(list(devices)))
    return s.scalar(stmt.order_by(model.id).limit(1).with_for_update(skip_locked=True))


def held_row(s: Session, model: type[QueueRow], row_id: int, token: str) -> QueueRow | None:
    """The row of a queue below the jobs that the claim ``token`` still holds (running, its lease), locked, with its
    lease let go; None when another holder took it over (the lease fences what a late worker stores)."""
    row = s.scalar(
        select(model).where(model.id == row_id, model.lease_owner == token, model.status == "running").with_for_update()
    )
    if row is not None:
        row.lease_owner, row.lease_expires_at = None, None
    return row


def could_not_run(row: SystemTest | Rejudge | RetimeRound | Hack, attempts: int, error: str, now: datetime) -> None:
    """A row whose run failed on the runner's side: queued again, or ``failed`` (with the note admins read) once its
    ``attempts`` are spent. Never the entry's fault."""
    done = row.attempts >= attempts
    row.status = "failed" if done else "queued"
    row.note = error[:2000] or "the runner failed"
    row.finished_at = now if done else None


def queue_system_test(
    s: Session, lb: Leaderboard, device: str, submission_id: int, cases: int, trigger: str, now: datetime
) -> SystemTest:
    """(Re)queue the system test of one entry on one device at ``now`` (the service's clock): its counts are cleared
    until it has run."""
    test = s.scalar(
        select(SystemTest).where(
            SystemTest.leaderboard_id == lb.id, SystemTest.device == device, SystemTest.submission_id == submission_id
        )
    )
    if test is None:
        test = SystemTest(leaderboard_id=lb.id, device=device, submission_id=submission_id)
        s.add(test)
    test.status, test.trigger, test.cases, test.passed = SystemTestStatus.QUEUED, trigger, cases, None
    test.timings, test.score_ns, test.created_at = None, None, now  # created_at: when it was (last) queued
    test.attempts, test.lease_owner, test.lease_expires_at, test.note = 0, None, None, None
    test.finished_at = None
    s.flush()
    return test


def _coverage(test: SystemTest, user_name: str, *, timed: bool) -> Coverage:
    """What anyone may see of a system test: its counts, and its timed figure only with ``timed`` (from the board's
    deadline on: while it is open, a file run on the held-out inputs could encode them in its own timing)."""
    score_ns = test.score_ns if timed else None
    return Coverage(test.device, test.submission_id, user_name, test.status, test.cases, test.passed, score_ns)


class SystemTestsMixin(RecordingMixin):
    """Queue, claim and record system tests; read their coverage."""

    def queue_system_tests(
        self, name: str, *, actor: str, top: int | None = SYSTEM_TEST_TOP, trigger: str = "admin"
    ) -> SystemTestsQueued:
        """Queue a system test of each device's ``top`` entries (None: every ranked entry; again for an entry tested
        before: its counts are cleared until it has run). ``trigger``: admin or nightly (``competition_tick``; the
        deadline's own are queued there, per device). Raises ``InvalidChange`` when the problem has no held-out
        cases."""
        if top is not None and not 1 <= top <= 1000:
            raise InvalidChange(f"--top must be from 1 to 1000, not {top}.")
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            problem = problem_from_snapshot(lb.task)
            if not problem.task.holdout:
                raise InvalidChange(f"Leaderboard {lb.name!r} has no held-out cases (holdout: in its task.yml).")
            queued = []
            for device in lb.devices:
                cases = holdout_cases_on(problem, device)
                if not cases:
                    continue
                for best, user in top_entries(s, lb, device, top):
                    test = queue_system_test(s, lb, device, best.submission_id, cases, trigger, self.clock())
                    queued.append(_coverage(test, user.name, timed=False))  # (nothing timed yet)
            self._audit(s, actor, "system_test", lb.name, top=top, trigger=trigger, entries=len(queued))
            total = len(problem.task.holdout)
            return SystemTestsQueued(lb.name, top, total, tuple(queued))

    def system_test_coverage(self, name: str, device: str | None = None) -> tuple[Coverage, ...]:
        """Every system test of a leaderboard (one device's, given one), in ranking order of their queueing."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=False)
            stmt = (
                select(SystemTest, User.name)
                .join(Submission, Submission.id == SystemTest.submission_id)
                .join(User, User.id == Submission.user_id)
                .where(SystemTest.leaderboard_id == lb.id)
            )
            if device is not None:
                stmt = stmt.where(SystemTest.device == device)
            rows = s.execute(stmt.order_by(SystemTest.device, SystemTest.id))
            closed = self.clock() >= lb.deadline
            return tuple(_coverage(t, n, timed=closed) for t, n in rows)

    def claim_system_test(
        self,
        worker_id: str,
        devices: Sequence[str] = (),
        *,
        max_submission_bytes: int | None = None,
        run_margin_s: float = 0.0,
    ) -> SystemTestClaim | None:
        """Take the oldest runnable system test for ``devices`` (all when empty): queued, or running with its lease
        run out. Its lease covers its whole run (no heartbeat): its limit, the wait the worker allows beyond it
        (``run_margin_s``, ``allowed_wait_s``) and a margin; on the database's clock (``lease_now``)."""
        with self.db.transaction() as s:
            now = lease_now(s, self.clock)
            test = oldest_runnable(s, SystemTest, devices, now)
            if test is None:
                return None
            if test.attempts >= SYSTEM_TEST_ATTEMPTS:  # its last holder died: not the entry's fault
                test.status, test.note, test.finished_at = SystemTestStatus.FAILED, "the lease ran out", now
                return None
            sub = s.get(Submission, test.submission_id)
            lb = s.get(Leaderboard, test.leaderboard_id)
            assert sub is not None and lb is not None  # (foreign keys, cascading deletes)
            limits = Limits(max_submission_bytes=max_submission_bytes or self.settings.max_submission_bytes)
            problem = problem_from_snapshot(lb.task)
            request = self._within_board_limit(
                problem.system_test_request(
                    sub.file_name,
                    sub.code.content,
                    device=harness_device(test.device),
                    device_name=test.device,
                    limits=limits,
                )
            ).model_copy(update={"nonce": secrets.token_hex(16)})
            token = f"{worker_id}#{secrets.token_hex(8)}"
            test.status, test.lease_owner, test.attempts = SystemTestStatus.RUNNING, token, test.attempts + 1
            test.lease_expires_at = now + timedelta(seconds=request.time_limit_s() + run_margin_s + LEASE_MARGIN_S)
            return SystemTestClaim(test.id, token, test.device, request)

    def record_system_test(self, claim: SystemTestClaim, result: RunResult | None, *, error: str = "") -> bool:
        """Store a system test's counts (``result``), or that it could not run (``error``: queued again until its
        attempts are spent). Fenced by the claim's lease: False when another holder took it over."""
        now = self.clock()
        with self.db.transaction() as s:
            test = held_row(s, SystemTest, claim.test_id, claim.token)
            if test is None:
                return False
            if result is None:
                could_not_run(test, SYSTEM_TEST_ATTEMPTS, error, now)
                return True
            ran = len(claim.request.tests)
            passed = sum(1 for t in result.tests if t.verdict is Verdict.ACCEPTED)
            if not result.passed:  # a run that failed after its checks (a limit, a crash) did not pass them all
                passed = min(passed, ran - 1)
            test.status, test.cases, test.passed, test.finished_at = SystemTestStatus.DONE, ran, min(passed, ran), now
            test.note = None
            test.timings, test.score_ns = held_out_timings(claim.request, result) if passed == ran else (None, None)
            return True


def held_out_timings(request: RunRequest, result: RunResult) -> tuple[list[dict[str, Any]] | None, float | None]:
    """A timed system test's statistics per held-out case (in the request's order; the cases themselves left out)
    and the entry's figure over them (the problem's rule over their medians); (None, None) for an untimed one or one
    whose timings are incomplete."""
    if request.mode is not Mode.RANKED or not request.benchmarks or not result.passed:
        return None, None
    stats = {b.index: b.stats for b in result.benchmarks if b.stats is not None and b.stats.median_ns > 0}
    if sorted(stats) != list(range(len(request.benchmarks))):
        return None, None
    ordered = [stats[i] for i in range(len(request.benchmarks))]
    figure = aggregate([st.median_ns for st in ordered], request.ranking_by)
    return [st.model_dump(mode="json") for st in ordered], figure


class _Handle:
    """The job handle of a system test: nothing to re-attach to, and no progress anyone follows."""

    @property
    def remote_ref(self) -> str | None:
        return None

    async def set_remote_ref(self, ref: str) -> None:
        return None

    async def progress(self, event: ProgressEvent) -> None:
        return None


class SystemTestRunner:
    """Runs one system test when a worker has nothing else to do (``Worker`` calls ``run_one`` after an empty
    claim)."""

    def __init__(self, service: SystemTestsMixin, launcher_for: Callable[[str], Launcher], margin_s: float) -> None:
        self.service = service
        self.launcher_for = launcher_for
        self.margin_s = margin_s

    async def run_one(self, worker_id: str, devices: Sequence[str], db: Callable[..., Awaitable[Any]]) -> bool:
        """Claim and run one system test; False when none was runnable."""
        wait_s = allowed_wait_s(self.launcher_for, devices, self.margin_s)
        claim: SystemTestClaim | None = await db(
            self.service.claim_system_test, worker_id, devices, run_margin_s=wait_s
        )
        if claim is None:
            return False
        result, error = await self._launch(claim)
        await db(
            store_retried, self.service.record_system_test, claim, result, error=error, what="storing a system test"
        )
        return True

    async def _launch(self, claim: SystemTestClaim) -> tuple[RunResult | None, str]:
        return await launch_quietly(self.launcher_for, claim.device, claim.request, self.margin_s,
                                    f"system test {claim.test_id}")  # fmt: skip


def allowed_wait_s(launcher_for: Callable[[str], Launcher], devices: Sequence[str], margin_s: float) -> float:
    """What a launch on any of ``devices`` may take beyond its run's limit (``launch_quietly``): the worker's margin,
    or more where a remote launcher waits longer (a Modal cold start, a GitHub queue: its ``wait_margin_s``). A
    claim's lease adds it to every run, so the lease covers the wait the worker allows."""
    waits = [margin_s]
    for device in devices:
        try:
            waits.append(launcher_for(device).wait_margin_s)
        except Exception:  # an unrouted device: the launch fails at once
            continue
    return max(waits)


async def launch_quietly(
    launcher_for: Callable[[str], Launcher],
    device: str,
    request: RunRequest,
    margin_s: float,
    what: str,
    *,
    keep_problem_fault: bool = False,
) -> tuple[RunResult | None, str]:
    """Run one request that no person follows (a system test, a rejudge): its result, or None and why it could not
    run (a launcher error, a timeout, an infrastructure error, a result that does not answer the request: the
    runner's fault, never the entry's). ``keep_problem_fault``: an infrastructure error the runner blames on the
    problem (``fault="problem"``) comes back as a result (an input hack's case the problem cannot make)."""
    try:
        launcher = launcher_for(device)
        bound = request.time_limit_s() + max(margin_s, launcher.wait_margin_s)  # as a job's (launch_timeout_s)
        result = await asyncio.wait_for(launcher.run(request, _Handle()), bound)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a launcher error, a timeout, an unrouted device: the runner's, never the entry's
        log.warning("%s could not run: %s", what, type(exc).__name__)
        return None, f"{type(exc).__name__}: {exc}"
    if not isinstance(result, RunResult):
        return None, "the runner reported an infrastructure error"
    problem_fault = keep_problem_fault and result.fault == "problem"  # an input hack's case the problem cannot make
    if result.verdict is Verdict.INFRASTRUCTURE_ERROR and not problem_fault:
        return None, result.message or "the runner reported an infrastructure error"
    mismatch = result.mismatch(request, allow_unsandboxed=launcher.allows_unsandboxed)
    if mismatch is not None:
        return None, mismatch
    return result, ""
