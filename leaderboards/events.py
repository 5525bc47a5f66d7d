"""Following a submission's progress from ``job_events``: what surfaces show while a submission runs.

``Follower`` polls the database (never the runner): every new event of the submission's jobs, in order, plus a
``queued`` event whenever a job's queue position changes. ``follow`` (blocking, the CLI) and ``follow_async`` (an
event loop: the bot, the API's event stream) run it until every job has finished — or until their time bound,
when they raise ``FollowTimeout`` (every wait is bounded).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from leaderboards.db import Database
from leaderboards.errors import KernelcupError, SubmissionNotFound
from leaderboards.models import Job, JobEvent, JobStatus, Submission
from leaderboards.queue import with_db_retry


class FollowTimeout(KernelcupError):
    """The submission did not finish within the time a surface was willing to wait."""


@dataclass(frozen=True)
class ProgressUpdate:
    job_id: int
    device: str
    phase: str
    detail: str
    created_at: datetime | None
    event_id: int | None = None
    """The stored event's id (a resumable position: ``after_id``); None for a queue-position update."""


@dataclass(frozen=True)
class Progress:
    """What one poll of a ``Follower`` found: the new updates, and whether every job has finished."""

    updates: tuple[ProgressUpdate, ...]
    done: bool


def queue_positions(s: Session, jobs: dict[int, tuple[str, str]]) -> dict[int, int]:
    """1-based position of each queued job among the queued jobs of its device (older jobs first).

    The one definition of a queue position: receipts, status views and progress events all come from here.
    ``jobs`` maps job id -> (device, status); jobs that are not queued get no position."""
    positions = {}
    for job_id, (device, status) in jobs.items():
        if status == JobStatus.QUEUED.value:
            ahead = s.scalar(
                select(func.count())
                .select_from(Job)
                .where(Job.status == JobStatus.QUEUED.value, Job.device == device, Job.id < job_id)
            )
            positions[job_id] = int(ahead or 0) + 1
    return positions


class Follower:
    """The one progress follower (bot, CLI and the API's event stream all use it): each ``poll`` reads what is
    new since the last one — stored events in order, and a ``queued`` update when a job's queue position
    changed — in one short transaction (retried while the database is briefly unreachable). Blocking.

    ``after_id`` resumes after a stored event (e.g. an SSE client's ``Last-Event-ID``).
    """

    def __init__(self, db: Database, submission_id: int, *, after_id: int = 0) -> None:
        self.db = db
        self.submission_id = submission_id
        self.after_id = after_id
        self._positions: dict[int, int] = {}

    def _read(self) -> tuple[dict[int, tuple[str, str]], list[ProgressUpdate], dict[int, int]]:
        with self.db.transaction() as s:
            if s.get(Submission, self.submission_id) is None:
                raise SubmissionNotFound(self.submission_id)
            jobs = {
                j.id: (j.device, j.status)
                for j in s.execute(
                    select(Job.id, Job.device, Job.status).where(Job.submission_id == self.submission_id)
                )
            }
            rows = s.execute(
                select(JobEvent.id, JobEvent.job_id, JobEvent.phase, JobEvent.detail, JobEvent.created_at)
                .where(JobEvent.job_id.in_(list(jobs)), JobEvent.id > self.after_id)
                .order_by(JobEvent.id)
            ).all()
            events = [ProgressUpdate(r.job_id, jobs[r.job_id][0], r.phase, r.detail, r.created_at, r.id) for r in rows]
            return jobs, events, queue_positions(s, jobs)

    def poll(self) -> Progress:
        jobs, events, positions = with_db_retry(self._read, what="follow")
        if events:
            self.after_id = max(e.event_id or 0 for e in events)
        updates = list(events)
        for job_id, pos in sorted(positions.items()):
            if self._positions.get(job_id) != pos:
                self._positions[job_id] = pos
                updates.append(ProgressUpdate(job_id, jobs[job_id][0], "queued", f"position {pos} in the queue", None))
        done = all(JobStatus(status).finished for _, status in jobs.values())
        return Progress(tuple(updates), done)


def _timeout(submission_id: int, timeout_s: float) -> FollowTimeout:
    return FollowTimeout(
        f"Submission #{submission_id} has not finished after {timeout_s:.0f} s; it stays queued — "
        f"check it later with its id."
    )


def follow(
    db: Database,
    submission_id: int,
    *,
    poll_s: float = 0.2,
    timeout_s: float = 3600.0,
    on_poll: Callable[[], None] | None = None,
    after_id: int = 0,
) -> Iterator[ProgressUpdate]:
    """Yield the submission's progress until all its jobs finished; ``FollowTimeout`` after ``timeout_s``.

    ``on_poll`` is called before each poll (e.g. to check that someone serves the queue).
    """
    deadline = time.monotonic() + timeout_s
    follower = Follower(db, submission_id, after_id=after_id)
    while True:
        if on_poll is not None:
            on_poll()
        progress = follower.poll()
        yield from progress.updates
        if progress.done:
            return
        if time.monotonic() >= deadline:
            raise _timeout(submission_id, timeout_s)
        time.sleep(poll_s)


async def follow_async(
    db: Database, submission_id: int, *, poll_s: float = 0.5, timeout_s: float = 3600.0, after_id: int = 0
) -> AsyncIterator[Progress]:
    """``follow`` for an event loop: each poll runs in a thread; yields every poll's ``Progress`` (also an empty
    one, so a consumer can send keep-alives), the last one with ``done``. Cancelling it leaves nothing running
    (at most the poll in flight finishes in its thread)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    follower = Follower(db, submission_id, after_id=after_id)
    while True:
        progress = await asyncio.to_thread(follower.poll)
        yield progress
        if progress.done:
            return
        if loop.time() >= deadline:
            raise _timeout(submission_id, timeout_s)
        await asyncio.sleep(poll_s)
