"""The job rows are the queue: claim, lease, heartbeat, complete, retry, release.

Every state change of a job a worker makes goes through here, in short transactions:

- **claim**: the oldest runnable job (queued and due, or running with an expired lease) becomes ``running`` under a
  fresh lease token. PostgreSQL picks the row with ``SELECT … FOR UPDATE SKIP LOCKED``, so concurrent workers never
  wait on each other nor take the same row; SQLite has a single writer (every transaction starts with
  ``BEGIN IMMEDIATE``, see ``leaderboards.db``), so its claims are simply serialised.
- **lease**: ``lease_owner`` holds a token unique to this claim (worker id + a nonce), ``lease_expires_at`` its
  expiry, renewed by ``heartbeat``. Any worker reclaims a job whose lease expired. Every later write of the
  holder (heartbeat, remote reference, result, retry) checks the token on the locked row in the same transaction,
  so a worker that lost its lease never stores anything: exactly one result per run kind, whoever finishes.
- **retry**: an infrastructure failure puts the job back to ``queued`` with ``next_attempt_at`` (exponential
  backoff) until ``max_attempts`` claims were made; then it fails with a message that says it is not the
  user's fault. A lease that expires on the last attempt fails the job the same way.

All functions are blocking (SQLAlchemy); the worker calls them through ``asyncio.to_thread``. Each one retries
its whole transaction when the database connection drops (``with_db_retry``), bounded in time.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy import and_, case, delete, func, or_, select, update
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session

from leaderboards.db import Database, database_now
from leaderboards.errors import LeaseLost
from leaderboards.models import Job, JobEvent, JobStatus, Run, Submission, User
from leaderboards.models import Worker as WorkerRow
from runners.retry import retrying

log = logging.getLogger(__name__)

T = TypeVar("T")

NOT_YOUR_FAULT = "not your fault"
WORKER_ALIVE_S = 60.0
"""A worker counts as alive (for ``kernelcup submit``) when it heartbeated this recently."""
CLAIM_CANDIDATES = 16
PROGRAM_RESERVE_SHARE = 0.5
"""The program lane (issue 33): a program account's job starts on a device only while, after it, this share of the
live workers serving the device (rounded up; at most all but one) is still idle. Programs fill what people leave
idle, and a person's job finds a free worker at once instead of waiting behind a program's; 0: no lane."""
"""Candidates a claim tries to lock, in fair order (concurrent workers skip the ones another holds)."""
PREEMPT_MAX = 3
"""Preemption (issue 33): how many times one program job may be given up for people's jobs. After that it is no
longer preempted and runs to its end, so every program job finishes (no starvation). 0: programs are never
preempted."""
PREEMPTED = "preempted"
"""The phase of the job event a preemption writes; the events count a job's preemptions (no column needed)."""
BUSY_SEPARATOR = "; "
"""Joins the labels of ``workers.busy_with``: one per item of work besides jobs the worker runs now."""
MAX_DETAIL = 2000
"""Longest event detail / job error stored (launcher messages can be long)."""


def busy_text(labels: Sequence[str]) -> str | None:
    """``workers.busy_with`` for these labels (None: no work besides jobs). Labels are the worker's own fixed words,
    never a submission's text; the separator is taken out of them so each one counts once."""
    clean = [" ".join(label.replace(BUSY_SEPARATOR.strip(), " ").split()) or "work" for label in labels]
    return BUSY_SEPARATOR.join(clean) or None


def busy_count(text: str | None) -> int:
    """How many items of work besides jobs a ``workers.busy_with`` value names."""
    return len(text.split(BUSY_SEPARATOR)) if text else 0


def serves(worker_devices: Sequence[str], device: str) -> bool:
    """Whether a worker registered for ``worker_devices`` serves ``device`` (no devices: every device)."""
    return not worker_devices or device.casefold() in {d.casefold() for d in worker_devices}


def new_worker_id() -> str:
    """A worker id unique across hosts and restarts: host, pid and a nonce."""
    return f"{socket.gethostname()[:120]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_token(worker_id: str) -> str:
    """A fresh lease token for one claim by ``worker_id`` (never reused)."""
    return f"{worker_id}#{uuid.uuid4().hex[:12]}"


def _clip(text: str, limit: int = MAX_DETAIL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


TRANSIENT_SQLSTATE_CLASSES = ("08", "57")
"""PostgreSQL error classes that pass: connection exceptions (08) and operator intervention (57: an admin shutdown, a
server starting or shutting down, a cancelled statement)."""
TRANSIENT_SQLSTATES = ("40001", "40P01", "53300")
"""Single PostgreSQL errors that pass: a serialization failure, a deadlock (the transaction is simply run again),
too many connections."""
TRANSIENT_SQLITE_CODES = (5, 6)
"""SQLite's primary result codes that pass: SQLITE_BUSY and SQLITE_LOCKED (another writer holds the lock)."""
TRANSIENT_MESSAGES = (
    "database is locked",
    "database table is locked",
    "server closed the connection",
    "could not connect to server",
    "connection refused",
    "connection reset",
    "connection timed out",
    "terminating connection",
    "could not receive data from server",
    "could not send data to server",
    "ssl connection has been closed",
    "no connection to the server",
    "connection already closed",
    "the database system is",
)
"""How a driver words a dropped connection or a busy lock when it gives no code (libpq's own client-side errors)."""


def _sqlstate(orig: object) -> str | None:
    code = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    return code if isinstance(code, str) else None


def transient_db_error(exc: BaseException) -> bool:
    """A database error that goes away by itself, so the same transaction is worth another try: a dropped or refused
    connection, a server shutting down or restarting, a serialization failure or deadlock, a busy or locked SQLite
    file. Anything else (a statement the database refuses whatever the time: a value too big, a limit exceeded, a
    disk full or read-only) would fail the same way forever, and retrying it without end would keep its job
    "running" for good; callers cap those (``with_db_retry``'s ``persistent_tries``)."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    sqlstate = _sqlstate(orig)
    if sqlstate is not None:
        return sqlstate[:2] in TRANSIENT_SQLSTATE_CLASSES or sqlstate in TRANSIENT_SQLSTATES
    sqlite_code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(sqlite_code, int):
        return sqlite_code & 0xFF in TRANSIENT_SQLITE_CODES
    if isinstance(exc, OperationalError) and hasattr(orig, "pgcode"):
        return True  # psycopg's OperationalError without a SQLSTATE comes from libpq itself: the connection failed
    text = str(orig or exc).casefold()
    return any(phrase in text for phrase in TRANSIENT_MESSAGES)


def with_db_retry(
    fn: Callable[[], T],
    *,
    budget_s: float | None = 60.0,
    what: str = "database call",
    until: threading.Event | None = None,
    max_wait_s: float = 2.0,
    persistent_tries: int = 1,
) -> T:
    """Run ``fn`` (one whole transaction), retrying it while the database is unreachable, for at most ``budget_s``
    (None: until it answers, or until ``until`` is set).

    A dropped connection is invalidated by SQLAlchemy and replaced from the pool on the next try, so a killed
    backend (``pg_terminate_backend``) or a restarted server costs a retry, not a job. The waits follow the
    platform's one retry policy (``runners.retry``): 0.05 s doubling up to 2 s. Only transient errors
    (``transient_db_error``) are waited out; any other database error is tried ``persistent_tries`` times in all,
    then raised, whatever the budget: an error that never goes away must end its caller's work, not hold it forever.
    """
    others = 0

    def retry_if(exc: BaseException) -> bool:
        nonlocal others
        if transient_db_error(exc):
            return True
        if not isinstance(exc, DBAPIError):
            return False
        others += 1
        return others < persistent_tries

    policy = retrying(
        retry_if=retry_if, what=what, first_s=0.05, max_s=max_wait_s, budget_s=budget_s, log=log, until=until
    )
    return policy(fn)


UNFOLLOWED_STORE_RETRY_S = 120.0
"""How long the result of work without a job row (a system test, a re-timing round, an input hack, a rejudge) waits
out a database that is down before its store gives up (the item then runs again once its lease is out)."""
STORE_TRIES = 3
"""Tries of storing a finished result when the database answers with an error that is not transient (a limit, a
value it refuses), before the store gives up (``with_db_retry``'s ``persistent_tries``)."""


def store_retried(fn: Callable[..., T], *args: object, what: str = "storing a result", **kwargs: object) -> T:
    """``fn(*args, **kwargs)``, one transaction storing a finished run, retried as a job's result is: a database
    blip (a dropped connection, a busy lock) costs a retry, not the run (which would otherwise run again after its
    lease, and fail after three blips); an error that does not pass is tried ``STORE_TRIES`` times. Blocking."""
    return with_db_retry(
        lambda: fn(*args, **kwargs),
        budget_s=UNFOLLOWED_STORE_RETRY_S,
        what=what,
        max_wait_s=5.0,
        persistent_tries=STORE_TRIES,
    )


@dataclass(frozen=True)
class Claim:
    """A job held by a worker: ``owner`` is this claim's lease token (unique per claim, never reused)."""

    job_id: int
    submission_id: int
    device: str
    attempt: int
    max_attempts: int
    owner: str
    remote_ref: str | None
    claimed_at: datetime
    queued_at: datetime
    program: bool = False
    """A program account's job: the worker may preempt it for a person's (``JobQueue.preempt_for_person``)."""


@dataclass(frozen=True)
class Outcome:
    """What became of a job after a failure: its new status, and when it runs again (if it does)."""

    status: str
    next_attempt_at: datetime | None
    message: str


@dataclass(frozen=True)
class Preemption:
    """A program's job given up for a person's (``JobQueue.preempt_for_person``): ``preempted``'s lease is revoked
    and its job is back in the queue; ``claim`` is the person's job the worker now holds in its place; ``count``
    how many times the preempted job has been preempted, this time included."""

    preempted: Claim
    claim: Claim
    count: int


def backoff_s(attempt: int, base_s: float, max_s: float) -> float:
    """Exponential backoff after the ``attempt``-th try (1-based): base, 2·base, 4·base, … capped at ``max_s``."""
    return float(min(max_s, base_s * (2 ** max(0, attempt - 1))))


class JobQueue:
    """Queue operations on the ``jobs`` table of one database. Blocking; thread-safe (a session per call)."""

    def __init__(
        self,
        db: Database,
        *,
        clock: Callable[[], datetime] | None = None,
        db_retry_s: float = 60.0,
        program_reserve_share: float = PROGRAM_RESERVE_SHARE,
        max_preemptions: int = PREEMPT_MAX,
    ) -> None:
        self.db = db
        self.clock = clock
        """None (every worker): the database's clock (``database_now``); a test's simulated clock stands in for it."""
        self.db_retry_s = db_retry_s
        self.until: threading.Event | None = None
        """Set (the worker's closing event): database retries give up at once instead of for ``db_retry_s``."""
        self.program_reserve_share = program_reserve_share
        self.max_preemptions = max_preemptions

    def now(self, s: Session) -> datetime:
        """The time every lease is written and compared by: the database's (read in ``s``'s transaction), never this
        process's wall clock, so a worker whose clock runs ahead cannot take a live worker's job nor fail it as
        given up, and one whose clock lags cannot keep a dead worker's lease. (``clock``, when given, replaces it.)"""
        return self.clock() if self.clock is not None else database_now(s)

    def _retry(self, fn: Callable[[], T], what: str) -> T:
        return with_db_retry(fn, budget_s=self.db_retry_s, what=what, until=self.until)

    # -- claiming -------------------------------------------------------------------------------------------

    def _runnable(self, now: datetime, devices: Sequence[str] | None, submission_id: int | None) -> list:
        due = and_(
            Job.status == JobStatus.QUEUED.value,
            or_(Job.next_attempt_at.is_(None), Job.next_attempt_at <= now),
        )
        expired = and_(
            Job.status == JobStatus.RUNNING.value,
            Job.lease_expires_at < now,
            Job.attempts < Job.max_attempts,
        )
        conds = [or_(due, expired)]
        if devices:
            conds.append(Job.device.in_(list(devices)))
        if submission_id is not None:
            conds.append(Job.submission_id == submission_id)
        return conds

    def claim(
        self,
        worker_id: str,
        *,
        lease_s: float,
        devices: Sequence[str] | None = None,
        submission_id: int | None = None,
    ) -> Claim | None:
        """Take a runnable job for ``devices`` (all when empty) under a new lease, or None.

        Fair between users: each user's oldest runnable job is a candidate, and the user whose job a worker took
        least recently (never, first) is served first, then the oldest job. So one user's hundred queued jobs
        take turns with everyone else's instead of sitting in front of them. A program account's job is passed over
        while its device's program lane is full (``program_lane``).
        """

        owner = lease_token(worker_id)  # made once: a retried transaction must recognise its own committed claim
        tries = 0

        def tx() -> Claim | None:
            nonlocal tries
            tries += 1
            with self.db.transaction() as s:
                now = self.now(s)
                mine = self._claimed_already(s, owner) if tries > 1 else None
                if mine is not None:
                    return mine
                self._fail_exhausted(s, now, devices)
                job = None
                candidates = self._fair_candidates(s, now, devices, submission_id)
                lane_full = self._full_program_lanes(s, now, candidates)
                for job_id in candidates:
                    if job_id in lane_full:
                        continue
                    # Lock the candidate only if it is still runnable (another worker may have taken it meanwhile).
                    job = s.scalar(
                        select(Job)
                        .where(Job.id == job_id, *self._runnable(now, devices, submission_id))
                        .with_for_update(skip_locked=True)
                    )
                    if job is not None:
                        break
                if job is None:
                    return None
                return self._take(s, job, worker_id, owner, lease_s=lease_s, now=now)

        return self._retry(tx, "claim")

    def _claimed_already(self, s: Session, owner: str) -> Claim | None:
        """The job a claim under the token ``owner`` already took, if its commit went through although its
        acknowledgement was lost (a connection dropped right after COMMIT): the retry hands that job back instead of
        taking a second one and stranding the first under a token nobody holds. Asked on a retry only (it reads
        every running job)."""
        job = s.scalar(
            select(Job).where(Job.lease_owner == owner, Job.status == JobStatus.RUNNING.value).with_for_update()
        )
        if job is None:
            return None
        return self._claim_of(s, job, claimed_at=job.heartbeat_at or self.now(s))

    def _claim_of(self, s: Session, job: Job, *, claimed_at: datetime) -> Claim:
        assert job.lease_owner is not None
        user_id = select(Submission.user_id).where(Submission.id == job.submission_id).scalar_subquery()
        return Claim(
            job_id=job.id,
            submission_id=job.submission_id,
            device=job.device,
            attempt=job.attempts,
            max_attempts=job.max_attempts,
            owner=job.lease_owner,
            remote_ref=job.remote_ref,
            claimed_at=claimed_at,
            queued_at=job.created_at,
            program=bool(s.scalar(select(User.is_program).where(User.id == user_id))),
        )

    def _take(self, s: Session, job: Job, worker_id: str, owner: str, *, lease_s: float, now: datetime) -> Claim:
        """Make the locked, runnable ``job`` this worker's under the fresh lease token ``owner`` (one more attempt)."""
        reclaimed = job.status == JobStatus.RUNNING.value
        previous, expired_at = job.lease_owner, job.lease_expires_at
        job.status = JobStatus.RUNNING.value
        job.attempts += 1
        job.lease_owner = owner
        job.lease_expires_at = now + timedelta(seconds=lease_s)
        job.heartbeat_at = now
        job.next_attempt_at = None
        job.started_at = now  # this attempt's start: an earlier one (released, retried, preempted, or its worker
        # dead) is not the submission's, and a compare's budget is spent from the attempt that completes it
        user_id = select(Submission.user_id).where(Submission.id == job.submission_id).scalar_subquery()
        s.execute(
            update(User)
            .where(User.id == user_id)
            .values(last_claimed_at=now)
            .execution_options(synchronize_session=False)
        )
        detail = f"attempt {job.attempts}/{job.max_attempts} by worker {worker_id}"
        if reclaimed:
            detail += self._why_reclaimed(s, previous, expired_at, now)
        s.add(JobEvent(job_id=job.id, phase="started", detail=_clip(detail), created_at=now))
        return self._claim_of(s, job, claimed_at=now)

    def _why_reclaimed(self, s: Session, previous: str | None, expired_at: datetime | None, now: datetime) -> str:
        """What became of the lease a claim takes over, for the job's events: its worker stopped (or died), or it is
        still alive by its own heartbeat but did not renew this job's lease (its run or its database connection
        stalled), which an operator reads differently from a dead worker."""
        ago = f" {max(0.0, (now - expired_at).total_seconds()):.0f} s ago" if expired_at is not None else ""
        worker_id = previous.rsplit("#", 1)[0] if previous else None
        row = s.get(WorkerRow, worker_id) if worker_id else None
        if row is None:
            return f" (the lease of {previous} expired{ago})"
        seen = f" {max(0.0, (now - row.heartbeat_at).total_seconds()):.0f} s ago"
        if row.stopped_at is None and row.heartbeat_at >= now - timedelta(seconds=WORKER_ALIVE_S):
            # Alive by its own heartbeat a moment ago, yet this lease went unrenewed: a stalled run or database
            # connection, or a worker that died since its last beat (a SIGKILL leaves a fresh row): say both.
            return (
                f" (the lease of {previous} expired{ago} without renewal; its worker was heard from{seen}: its run "
                "or its connection to the database stalled, or it stopped since)"
            )
        return f" (the lease of {previous} expired{ago}: its worker was last heard from{seen})"

    def _fair_candidates(
        self,
        s: Session,
        now: datetime,
        devices: Sequence[str] | None,
        submission_id: int | None,
        *,
        people_only: bool = False,
    ) -> list[int]:
        """Runnable job ids in the order they should be served: jobs whose worker died first (they were started
        already and have waited a lease), then per user the oldest job, users who were served least recently first
        (round-robin), then by age. A few, so that concurrent workers each find one."""
        per_user = (
            select(
                Job.id.label("job_id"),
                Submission.user_id.label("user_id"),
                case((Job.status == JobStatus.RUNNING.value, 0), else_=1).label("fresh"),
                func.row_number().over(partition_by=Submission.user_id, order_by=Job.id).label("turn"),
            )
            .join(Submission, Submission.id == Job.submission_id)
            .where(*self._runnable(now, devices, submission_id))
            .subquery()
        )
        people = [User.is_program.is_(False)] if people_only else []
        rows = s.execute(
            select(per_user.c.job_id)
            .join(User, User.id == per_user.c.user_id)
            .where(or_(per_user.c.turn <= 2, per_user.c.fresh == 0), *people)
            .order_by(per_user.c.fresh, per_user.c.turn, User.last_claimed_at.asc().nulls_first(), per_user.c.job_id)
            .limit(CLAIM_CANDIDATES)
        ).all()
        return [int(r[0]) for r in rows]

    def _live_workers(self, s: Session, device: str, now: datetime) -> list[tuple[list[str], str | None]]:
        """(devices, busy_with) of the live, healthy worker processes serving ``device``."""
        since = now - timedelta(seconds=WORKER_ALIVE_S)
        rows = s.execute(
            select(WorkerRow.devices, WorkerRow.busy_with).where(
                WorkerRow.heartbeat_at >= since, WorkerRow.stopped_at.is_(None), WorkerRow.healthy.is_(True)
            )
        ).all()
        return [(list(d or []), b) for d, b in rows if serves(d or [], device)]

    def places(self, s: Session, device: str, now: datetime) -> int:
        """The places serving ``device``: its live, healthy worker processes (at least one). A worker process counts
        as one place whatever its ``--concurrency``."""
        return max(1, len(self._live_workers(s, device, now)))

    def _busy_elsewhere(self, s: Session, device: str, now: datetime) -> int:
        """Places serving ``device`` taken by work that has no job row: the input hacks, system tests, re-timing
        rounds and rejudges its live, healthy workers run now (``workers.busy_with``, one label each)."""
        return sum(busy_count(busy) for _, busy in self._live_workers(s, device, now))

    def _occupied(self, s: Session, device: str, now: datetime) -> int:
        """Places serving ``device`` that are not idle: jobs running there under a live lease, and the work besides
        jobs its workers run (``_busy_elsewhere``). Every kind of work a worker holds a place with counts."""
        return self._running(s, device, now) + self._busy_elsewhere(s, device, now)

    def program_lane(self, s: Session, device: str, now: datetime) -> int:
        """How many jobs may run on ``device`` with a program's among them: its live, healthy workers less those kept
        idle for people (``program_reserve_share`` of them, rounded up, at most all but one)."""
        workers = self.places(s, device, now)
        return workers - min(math.ceil(self.program_reserve_share * workers), workers - 1)

    def _running(self, s: Session, device: str, now: datetime) -> int:
        """Jobs running on ``device`` under a live lease (anyone's)."""
        return int(
            s.scalar(
                select(func.count())
                .select_from(Job)
                .where(Job.device == device, Job.status == JobStatus.RUNNING.value, Job.lease_expires_at >= now)
            )
            or 0
        )

    def _full_program_lanes(self, s: Session, now: datetime, candidates: Sequence[int]) -> set[int]:
        """The candidates that are program accounts' jobs on a device whose program lane is full: as many places are
        taken there (jobs, anyone's, under live leases; and the work besides jobs, ``_occupied``) as ``program_lane``
        allows. Concurrent claims may pass it by one
        each: it is a share of the workers, not a lock."""
        if self.program_reserve_share <= 0 or not candidates:
            return set()
        programs = s.execute(
            select(Job.id, Job.device)
            .join(Submission, Submission.id == Job.submission_id)
            .join(User, User.id == Submission.user_id)
            .where(Job.id.in_(list(candidates)), User.is_program.is_(True))
        ).all()
        full: set[int] = set()
        for device in {d for _, d in programs}:
            if self._occupied(s, device, now) >= self.program_lane(s, device, now):
                full |= {job_id for job_id, d in programs if d == device}
        return full

    # -- preemption (issue 33) ------------------------------------------------------------------------------------

    def preemptions(self, s: Session, job_id: int) -> int:
        """How many times ``job_id`` was preempted (its ``preempted`` events)."""
        return int(
            s.scalar(
                select(func.count()).select_from(JobEvent).where(JobEvent.job_id == job_id, JobEvent.phase == PREEMPTED)
            )
            or 0
        )

    def _people_waiting(self, s: Session, device: str, now: datetime) -> int:
        """People's (not program accounts') runnable jobs on ``device``: queued and due, or left by a dead worker."""
        return int(
            s.scalar(
                select(func.count())
                .select_from(Job)
                .join(Submission, Submission.id == Job.submission_id)
                .join(User, User.id == Submission.user_id)
                .where(*self._runnable(now, [device], None), User.is_program.is_(False))
            )
            or 0
        )

    def _person_to_take(self, s: Session, device: str, now: datetime) -> Job | None:
        """The person's job to start in a preempted job's place, locked: the first person's in the claim's fair
        order that no other worker holds."""
        for job_id in self._fair_candidates(s, now, [device], None, people_only=True):
            runnable = self._runnable(now, [device], None)
            job = s.scalar(select(Job).where(Job.id == job_id, *runnable).with_for_update(skip_locked=True))
            if job is not None:
                return job
        return None

    def preempt_for_person(self, worker_id: str, held: Sequence[Claim], *, lease_s: float) -> Preemption | None:
        """Give up one of ``held`` (this worker's claims) that is a program's job for a person's waiting job, when
        people wait on its device and no idle place would take them: more of people's jobs are runnable there than
        places (``places``) stand idle. A place is idle when it runs neither a job nor any work besides jobs (an
        input hack, a system test, a re-timing round, a rejudge: ``workers.busy_with``, ``_occupied``). In one
        transaction the program job's lease is revoked and it goes back to the queue (its attempt not counted, its
        stored runs kept, its start forgotten), and the person's job becomes this worker's under a new lease. The
        worker then kills the program's run (the launcher's cancel path), waits for the kill (bounded), and runs the
        person's job in its place.

        Never a person's job; never a job preempted ``max_preemptions`` times already (it runs to its end: no
        starvation); of the rest the one preempted least, then the one claimed last (the least work lost). The
        caller leaves out jobs whose result it is storing. None when nothing is to be done (or preemption is off)."""
        programs = [c for c in held if c.program]
        if self.max_preemptions <= 0 or not programs:
            return None
        owner = lease_token(worker_id)  # made once, as in ``claim``
        tries = 0

        def tx() -> Preemption | None:
            nonlocal tries
            tries += 1
            with self.db.transaction() as s:
                now = self.now(s)
                mine = self._claimed_already(s, owner) if tries > 1 else None
                if mine is not None:  # committed, its acknowledgement lost: the victim is already back in the queue
                    return self._preempted_already(s, programs, mine)
                for device in sorted({c.device for c in programs}):
                    waiting = self._people_waiting(s, device, now)
                    if waiting == 0 or waiting <= self.places(s, device, now) - self._occupied(s, device, now):
                        continue  # nobody waits, or an idle worker will take them at its next poll
                    counts = {c.job_id: self.preemptions(s, c.job_id) for c in programs if c.device == device}
                    order = sorted(
                        (c for c in programs if c.device == device and counts[c.job_id] < self.max_preemptions),
                        key=lambda c: (counts[c.job_id], -c.claimed_at.timestamp(), -c.job_id),
                    )
                    if not order:
                        continue
                    person = self._person_to_take(s, device, now)
                    if person is None:
                        continue  # each waiting person's job is being taken by another worker right now
                    for victim in order:
                        try:
                            row = self._held(s, victim)
                        except LeaseLost:
                            continue  # finished or lost meanwhile
                        count = counts[victim.job_id] + 1
                        self._revoke(s, row, now, count)
                        claim = self._take(s, person, worker_id, owner, lease_s=lease_s, now=now)
                        return Preemption(preempted=victim, claim=claim, count=count)
                return None

        return self._retry(tx, "preempt_for_person")

    def _preempted_already(self, s: Session, programs: Sequence[Claim], claim: Claim) -> Preemption | None:
        """The preemption a retried ``preempt_for_person`` had committed: of ``programs``, the one whose lease it
        revoked (no longer held under its token; its ``preempted`` event the latest)."""
        latest: tuple[int, Claim] | None = None
        for c in programs:
            if s.scalar(select(Job.lease_owner).where(Job.id == c.job_id)) == c.owner:
                continue
            event = s.scalar(
                select(func.max(JobEvent.id)).where(JobEvent.job_id == c.job_id, JobEvent.phase == PREEMPTED)
            )
            if event is not None and (latest is None or event > latest[0]):
                latest = (int(event), c)
        if latest is None:
            return None
        return Preemption(preempted=latest[1], claim=claim, count=self.preemptions(s, latest[1].job_id))

    def _revoke(self, s: Session, job: Job, now: datetime, count: int) -> None:
        """Back to the queue at once: the lease revoked (every later write of its holder is refused), the attempt not
        counted, the remote run forgotten (its launcher cancels it), and its start cleared, so a compare's budget is
        spent from the start of the attempt that completes it, not from the killed one."""
        job.status = JobStatus.QUEUED.value
        job.attempts = max(0, job.attempts - 1)
        job.lease_owner = None
        job.lease_expires_at = None
        job.next_attempt_at = None
        job.remote_ref = None
        job.started_at = None
        last = " (the last time: it now runs to its end)" if count >= self.max_preemptions else ""
        detail = (
            f"preempted {count}/{self.max_preemptions} for a person's job{last}; back in the queue, not counted as an "
            "attempt, and the killed run is not charged to the GPU budget"
        )
        s.add(JobEvent(job_id=job.id, phase=PREEMPTED, detail=_clip(detail), created_at=now))

    def _fail_exhausted(self, s: Session, now: datetime, devices: Sequence[str] | None) -> None:
        """Fail running jobs whose lease expired on their last attempt (their worker died every time)."""
        conds = [
            Job.status == JobStatus.RUNNING.value,
            Job.lease_expires_at < now,
            Job.attempts >= Job.max_attempts,
        ]
        if devices:
            conds.append(Job.device.in_(list(devices)))
        jobs = s.scalars(select(Job).where(*conds).order_by(Job.id).limit(20).with_for_update(skip_locked=True)).all()
        for job in jobs:
            message = (
                f"The runner stopped responding on each of {job.attempts} attempts; the job was given up "
                f"(infrastructure error, {NOT_YOUR_FAULT}). Please submit again later."
            )
            self._finish(s, job, JobStatus.FAILED, now, error=message, phase="failed")

    # -- while holding a lease ----------------------------------------------------------------------------------

    def _held(self, s: Session, claim: Claim) -> Job:
        """The job row, locked, if ``claim`` still holds it; else ``LeaseLost``."""
        job = s.scalar(select(Job).where(Job.id == claim.job_id).with_for_update())
        if job is None or job.lease_owner != claim.owner or job.status != JobStatus.RUNNING.value:
            raise LeaseLost(claim.job_id, claim.owner)
        return job

    def heartbeat(self, claim: Claim, *, lease_s: float) -> bool:
        """Renew the lease; False when it was lost (expired and taken over, or the job was cancelled)."""

        def tx() -> bool:
            with self.db.transaction() as s:
                now = self.now(s)
                res = s.execute(
                    update(Job)
                    .where(
                        Job.id == claim.job_id,
                        Job.lease_owner == claim.owner,
                        Job.status == JobStatus.RUNNING.value,
                    )
                    .values(heartbeat_at=now, lease_expires_at=now + timedelta(seconds=lease_s))
                    .execution_options(synchronize_session=False)
                )
                return bool(res.rowcount)  # type: ignore[attr-defined]  # an UPDATE's result is a CursorResult

        return self._retry(tx, "heartbeat")

    def set_remote_ref(self, claim: Claim, ref: str) -> None:
        """Store the remote run reference of the run in flight (``LeaseLost`` if the job is no longer held)."""

        def tx() -> None:
            with self.db.transaction() as s:
                job = self._held(s, claim)
                job.remote_ref = ref[:500]

        self._retry(tx, "set_remote_ref")

    def add_event(self, claim: Claim, phase: str, detail: str = "") -> bool:
        """Record a progress event of the run in flight, fenced like results: only while ``claim`` holds the job.

        A late event of a worker that lost its lease (or of a job that was cancelled) is dropped, so a job's
        timeline only ever shows its current holder's progress. False when dropped."""

        def tx() -> bool:
            with self.db.transaction() as s:
                held = s.scalar(
                    select(Job.id).where(
                        Job.id == claim.job_id,
                        Job.lease_owner == claim.owner,
                        Job.status == JobStatus.RUNNING.value,
                    )
                )
                if held is None:
                    return False
                s.add(JobEvent(job_id=claim.job_id, phase=phase[:32], detail=_clip(detail), created_at=self.now(s)))
                return True

        return self._retry(tx, "add_event")

    def add_note(self, claim: Claim, phase: str, detail: str) -> None:
        """Record what a worker did to a job it held, even after losing the lease (the run it killed). Checked
        against the claim's submission, so it can never land on another job."""

        def tx() -> None:
            with self.db.transaction() as s:
                if s.scalar(select(Job.submission_id).where(Job.id == claim.job_id)) != claim.submission_id:
                    return
                s.add(JobEvent(job_id=claim.job_id, phase=phase[:32], detail=_clip(detail), created_at=self.now(s)))

        self._retry(tx, "add_note")

    # -- ending an attempt ----------------------------------------------------------------------------------------

    def _finish(
        self, s: Session, job: Job, status: JobStatus, now: datetime, *, error: str | None, phase: str, detail: str = ""
    ) -> None:
        job.status = status.value
        job.finished_at = now
        job.lease_expires_at = None
        job.next_attempt_at = None
        job.remote_ref = None
        job.error = _clip(error) if error else None
        s.add(JobEvent(job_id=job.id, phase=phase, detail=_clip(detail or error or ""), created_at=now))

    def complete(self, s: Session, claim: Claim, *, detail: str = "") -> None:
        """Mark the held job succeeded inside the caller's transaction (the one that stored its last run).

        The lease owner is kept on the finished row: it records who ran it, and lets a retried commit recognise
        its own earlier success (``finished_by``).
        """
        job = self._held(s, claim)
        self._finish(s, job, JobStatus.SUCCEEDED, self.now(s), error=None, phase="done", detail=detail)

    def finished_by(self, claim: Claim) -> bool:
        """Whether this claim already finished its job (a commit that succeeded although the call failed)."""

        def tx() -> bool:
            with self.db.transaction() as s:
                job = s.get(Job, claim.job_id)
                return job is not None and job.lease_owner == claim.owner and job.status != JobStatus.RUNNING.value

        return self._retry(tx, "finished_by")

    def clear_remote_ref(self, s: Session, claim: Claim) -> None:
        """Forget the reference of a run whose result was stored (inside the caller's transaction)."""
        self._held(s, claim).remote_ref = None

    def retry_or_fail(
        self,
        claim: Claim,
        reason: str,
        *,
        backoff_base_s: float,
        backoff_max_s: float,
        final_status: JobStatus = JobStatus.FAILED,
    ) -> Outcome:
        """After an infrastructure failure: back to the queue after a backoff, or failed after the last attempt.

        Raises ``LeaseLost`` if the job is no longer held (nothing is changed then).
        """

        def tx() -> Outcome:
            with self.db.transaction() as s:
                now = self.now(s)
                job = self._held(s, claim)
                if job.attempts >= job.max_attempts:
                    message = (
                        f"The platform could not run this submission ({NOT_YOUR_FAULT}): {reason} "
                        f"(tried {job.attempts} times). Please submit again later."
                    )
                    self._finish(s, job, final_status, now, error=message, phase="failed")
                    return Outcome(final_status.value, None, message)
                delay = backoff_s(job.attempts, backoff_base_s, backoff_max_s)
                job.status = JobStatus.QUEUED.value
                job.lease_owner = None
                job.lease_expires_at = None
                job.next_attempt_at = now + timedelta(seconds=delay)
                job.remote_ref = None  # that remote run failed; the next attempt starts a fresh one
                job.started_at = None  # not charged: the platform's failure, and its wait in the queue (as _revoke)
                job.error = _clip(f"infrastructure error ({NOT_YOUR_FAULT}): {reason}")
                message = (
                    f"infrastructure error ({NOT_YOUR_FAULT}): {reason}; "
                    f"retry {job.attempts + 1}/{job.max_attempts} in {delay:.0f} s"
                )
                s.add(JobEvent(job_id=job.id, phase="retrying", detail=_clip(message), created_at=now))
                return Outcome(JobStatus.QUEUED.value, job.next_attempt_at, message)

        return self._retry(tx, "retry_or_fail")

    def refuse(self, claim: Claim, reason: str) -> Outcome:
        """Fail the held job at once, no retry: the runner cannot serve its device (a configuration problem, which
        another attempt would only repeat). ``reason`` is shown to the user as it is.

        Raises ``LeaseLost`` if the job is no longer held (nothing is changed then).
        """

        def tx() -> Outcome:
            with self.db.transaction() as s:
                job = self._held(s, claim)
                self._finish(s, job, JobStatus.FAILED, self.now(s), error=reason, phase="failed")
                return Outcome(JobStatus.FAILED.value, None, reason)

        return self._retry(tx, "refuse")

    def release(self, claim: Claim, *, reason: str = "the worker stopped") -> bool:
        """Give a held job back to the queue at once, not counting the attempt (graceful worker stop)."""

        def tx() -> bool:
            with self.db.transaction() as s:
                now = self.now(s)
                try:
                    job = self._held(s, claim)
                except LeaseLost:
                    return False
                job.status = JobStatus.QUEUED.value
                job.attempts = max(0, job.attempts - 1)
                job.lease_owner = None
                job.lease_expires_at = None
                job.next_attempt_at = None
                job.remote_ref = None  # the run was killed (launchers cancel their remote run when stopped)
                job.started_at = None  # a compare's budget is spent from the attempt that completes it (as _revoke)
                s.add(JobEvent(job_id=job.id, phase="queued", detail=_clip(f"requeued: {reason}"), created_at=now))
                return True

        return self._retry(tx, "release")

    # -- workers --------------------------------------------------------------------------------------------------

    def register_worker(self, worker_id: str, devices: Sequence[str]) -> None:
        def tx() -> None:
            with self.db.transaction() as s:
                now = self.now(s)
                row = s.get(WorkerRow, worker_id)
                if row is None:
                    s.add(
                        WorkerRow(
                            id=worker_id,
                            hostname=socket.gethostname()[:200],
                            pid=os.getpid(),
                            devices=list(devices),
                            started_at=now,
                            heartbeat_at=now,
                            busy_with=None,
                        )
                    )
                else:  # a worker started again under its id runs nothing yet
                    row.heartbeat_at, row.stopped_at, row.devices, row.busy_with = now, None, list(devices), None

        self._retry(tx, "register_worker")

    def set_worker_health(self, worker_id: str, healthy: bool, note: str = "") -> None:
        """Record whether a worker claims jobs (healthy) or stopped because its runner is broken, and why."""

        def tx() -> None:
            with self.db.transaction() as s:
                now = self.now(s)
                row = s.get(WorkerRow, worker_id)
                if row is None:
                    return
                if healthy:
                    row.healthy, row.health_note, row.unhealthy_since = True, None, None
                else:
                    row.unhealthy_since = row.unhealthy_since if not row.healthy else now
                    row.healthy, row.health_note = False, _clip(note)

        self._retry(tx, "set_worker_health")

    def worker_heartbeat(self, worker_id: str, busy: Sequence[str] | None = None) -> None:
        """The worker is alive; with ``busy``, also what it runs besides jobs now (as ``set_worker_busy``), so a
        write of it that failed is put right at the next beat."""
        values: dict[str, object] = {}
        if busy is not None:
            values["busy_with"] = busy_text(busy)

        def tx() -> None:
            with self.db.transaction() as s:
                values["heartbeat_at"] = self.now(s)
                s.execute(
                    update(WorkerRow)
                    .where(WorkerRow.id == worker_id)
                    .values(**values)
                    .execution_options(synchronize_session=False)
                )

        self._retry(tx, "worker_heartbeat")

    def set_worker_busy(self, worker_id: str, busy: Sequence[str]) -> None:
        """Record the work besides jobs ``worker_id`` runs now, one label per item (``"input hack"``, ``"system
        test"``, ...; empty: none). Such work holds a place but no job row: the queue counts it as a busy place
        (``_occupied``) for preemption and the program lane. Written when an item starts and ends."""
        text = busy_text(busy)

        def tx() -> None:
            with self.db.transaction() as s:
                s.execute(
                    update(WorkerRow)
                    .where(WorkerRow.id == worker_id)
                    .values(busy_with=text)
                    .execution_options(synchronize_session=False)
                )

        self._retry(tx, "set_worker_busy")

    def stop_worker(self, worker_id: str) -> None:
        def tx() -> None:
            with self.db.transaction() as s:
                s.execute(
                    update(WorkerRow)
                    .where(WorkerRow.id == worker_id)
                    .values(stopped_at=self.now(s), busy_with=None)
                    .execution_options(synchronize_session=False)
                )

        self._retry(tx, "stop_worker")

    def alive_workers(self, *, device: str | None = None, within_s: float = WORKER_ALIVE_S) -> list[str]:
        """Ids of workers that heartbeated within ``within_s`` and serve ``device`` (a worker with no devices
        serves every device)."""

        def tx() -> list[str]:
            with self.db.transaction() as s:
                since = self.now(s) - timedelta(seconds=within_s)
                rows = s.scalars(
                    select(WorkerRow).where(WorkerRow.heartbeat_at >= since, WorkerRow.stopped_at.is_(None))
                ).all()
                return [w.id for w in rows if device is None or serves(w.devices, device)]

        return self._retry(tx, "alive_workers")

    def prune_workers(self, *, older_than_s: float = 7 * 24 * 3600) -> int:
        """Delete worker rows that stopped heartbeating long ago (housekeeping)."""

        def tx() -> int:
            with self.db.transaction() as s:
                since = self.now(s) - timedelta(seconds=older_than_s)
                result = s.execute(delete(WorkerRow).where(WorkerRow.heartbeat_at < since))
                return int(result.rowcount or 0)  # type: ignore[attr-defined]  # a DELETE's result is a CursorResult

        return self._retry(tx, "prune_workers")

    # -- reading ----------------------------------------------------------------------------------------------------

    def recorded_kinds(self, job_id: int) -> set[bool]:
        def tx() -> set[bool]:
            with self.db.transaction() as s:
                return set(s.scalars(select(Run.secret).where(Run.job_id == job_id)))

        return self._retry(tx, "recorded_kinds")
