"""A claim whose COMMIT reached the database but whose acknowledgement was lost (the connection dropped right after
it) is retried whole by ``with_db_retry``: the retry hands back the job the first try took, instead of taking a
second one and stranding the first under a token nobody holds. On SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import future, make_problem
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from leaderboards.models import Job, JobEvent, JobStatus
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    return service


@contextlib.contextmanager
def ack_lost_once(svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Within it, the first transaction that commits loses its acknowledgement (the connection drops right after the
    COMMIT); the list it yields holds a 1 once that happened."""
    real = svc.db.transaction
    lost: list[int] = []

    @contextlib.contextmanager
    def transaction() -> Iterator[Session]:
        with real() as s:
            yield s
        if not lost:  # committed; the acknowledgement never arrives
            lost.append(1)
            raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))

    monkeypatch.setattr(svc.db, "transaction", transaction)
    try:
        yield lost
    finally:
        monkeypatch.setattr(svc.db, "transaction", real)


def test_a_claim_whose_commit_ack_is_lost_keeps_the_job_it_took(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch
) -> None:
    for user in ("ann", "bob"):
        svc.submit(UserRef(user), "s.py", f"x = '{user}'\n".encode(), "add", ["cpu"], "test")
    with ack_lost_once(svc, monkeypatch) as lost:
        claim = JobQueue(svc.db, db_retry_s=5).claim("w1", lease_s=60, devices=["cpu"])

    assert lost and claim is not None
    with svc.db.transaction() as s:
        jobs = {j.id: (j.status, j.attempts, j.lease_owner) for j in s.scalars(select(Job))}
        started = list(s.scalars(select(JobEvent.job_id).where(JobEvent.phase == "started")))
    assert jobs[claim.job_id] == (JobStatus.RUNNING.value, 1, claim.owner)
    others = [v for k, v in jobs.items() if k != claim.job_id]
    assert others == [(JobStatus.QUEUED.value, 0, None)]  # not taken and stranded
    assert started == [claim.job_id]


def test_a_preemption_whose_commit_ack_is_lost_hands_back_the_persons_job(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = UserRef("generator")
    svc.create_token(bot, program=True)
    queue = JobQueue(svc.db, db_retry_s=5, program_reserve_share=0.0)
    queue.register_worker("w0", ["cpu"])
    for i in range(2):
        svc.submit(bot, "k.py", f"x = {i}\n".encode(), "add", ["cpu"], "test")
    program = queue.claim("w0", lease_s=60, devices=["cpu"])
    assert program is not None and program.program
    ann = svc.submit(UserRef("ann"), "k.py", b"x = 'ann'\n", "add", ["cpu"], "test").jobs[0].job_id
    with ack_lost_once(svc, monkeypatch) as lost:
        preemption = queue.preempt_for_person("w0", [program], lease_s=60)

    assert lost and preemption is not None
    assert preemption.preempted == program and preemption.claim.job_id == ann and preemption.count == 1
    with svc.db.transaction() as s:
        running = {j.id: j.lease_owner for j in s.scalars(select(Job).where(Job.status == JobStatus.RUNNING.value))}
    assert running == {ann: preemption.claim.owner}  # the other program job was not taken in a second try
