"""Following a submission's progress from ``job_events``: what surfaces show while a submission runs.

``follow`` polls the database (never the runner): every new event of the submission's jobs, in order, plus a
``queued`` event whenever a job's queue position changes, until every job has finished — or until its time bound,
when it raises ``FollowTimeout`` (every wait is bounded). Blocking; async surfaces iterate it in a thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
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


@dataclass(frozen=True)
class _Snapshot:
    jobs: dict[int, tuple[str, str]]  # job id -> (device, status)
    events: list[ProgressUpdate]
    last_id: int
    positions: dict[int, int]


def queue_positions(s: Session, jobs: dict[int, tuple[str, str]]) -> dict[int, int]:
    """1-based position of each queued job among the queued jobs of its device (older jobs first)."""
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


def _snapshot(db: Database, submission_id: int, after_id: int) -> _Snapshot:
    def tx() -> _Snapshot:
        with db.transaction() as s:
            if s.get(Submission, submission_id) is None:
                raise SubmissionNotFound(submission_id)
            jobs = {
                j.id: (j.device, j.status)
                for j in s.execute(select(Job.id, Job.device, Job.status).where(Job.submission_id == submission_id))
            }
            rows = s.execute(
                select(JobEvent.id, JobEvent.job_id, JobEvent.phase, JobEvent.detail, JobEvent.created_at)
                .where(JobEvent.job_id.in_(list(jobs)), JobEvent.id > after_id)
                .order_by(JobEvent.id)
            ).all()
            events = [ProgressUpdate(r.job_id, jobs[r.job_id][0], r.phase, r.detail, r.created_at) for r in rows]
            last = max((r.id for r in rows), default=after_id)
            return _Snapshot(jobs, events, last, queue_positions(s, jobs))

    return with_db_retry(tx, what="follow")


def follow(
    db: Database,
    submission_id: int,
    *,
    poll_s: float = 0.2,
    timeout_s: float = 3600.0,
    on_poll: Callable[[], None] | None = None,
) -> Iterator[ProgressUpdate]:
    """Yield the submission's progress until all its jobs finished; ``FollowTimeout`` after ``timeout_s``.

    ``on_poll`` is called before each poll (e.g. to check that someone serves the queue).
    """
    deadline = time.monotonic() + timeout_s
    after_id = 0
    positions: dict[int, int] = {}
    while True:
        if on_poll is not None:
            on_poll()
        snap = _snapshot(db, submission_id, after_id)
        after_id = snap.last_id
        yield from snap.events
        for job_id, pos in sorted(snap.positions.items()):
            if positions.get(job_id) != pos:
                positions[job_id] = pos
                yield ProgressUpdate(job_id, snap.jobs[job_id][0], "queued", f"position {pos} in the queue", None)
        if all(JobStatus(status).finished for _, status in snap.jobs.values()):
            return
        if time.monotonic() >= deadline:
            raise FollowTimeout(
                f"Submission #{submission_id} has not finished after {timeout_s:.0f} s; it stays queued — "
                f"check it later with its id."
            )
        time.sleep(poll_s)
