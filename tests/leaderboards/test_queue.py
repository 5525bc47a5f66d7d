"""The job rows as a queue: claims, leases, heartbeats, retries, releases — on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select, text
from sqlalchemy.exc import OperationalError

from leaderboards.errors import LeaseLost
from leaderboards.models import Job, JobEvent, JobStatus, Run, utcnow
from leaderboards.queue import JobQueue, backoff_s, with_db_retry
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService

LEASE = 30.0


class Clock:
    """A settable clock shared by the service and the queue."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(service: LeaderboardService, clock: Clock, tmp_path: Path) -> LeaderboardService:
    service.clock = clock
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu", "H100"])
    return service


@pytest.fixture
def queue(svc: LeaderboardService, clock: Clock) -> JobQueue:
    return JobQueue(svc.db, clock=clock, db_retry_s=5)


def submit(svc: LeaderboardService, user: str = "ann", devices: list[str] | None = None, mode: str = "ranked") -> int:
    receipt = svc.submit(
        UserRef(user), "s.py", b"def custom_kernel(d):\n    return d\n", "add", devices or ["cpu"], mode
    )
    return receipt.submission_id


def job_row(svc: LeaderboardService, job_id: int) -> Job:
    with svc.db.transaction() as s:
        job = s.get(Job, job_id)
        assert job is not None
        s.expunge(job)
        return job


def phases(svc: LeaderboardService, job_id: int) -> list[str]:
    with svc.db.transaction() as s:
        return list(s.scalars(select(JobEvent.phase).where(JobEvent.job_id == job_id).order_by(JobEvent.id)))


def test_claim_takes_oldest_job_under_a_lease(svc: LeaderboardService, queue: JobQueue, clock: Clock) -> None:
    first, second = submit(svc), submit(svc)
    claim = queue.claim("w1", lease_s=LEASE)
    assert claim is not None and claim.submission_id == first
    assert claim.attempt == 1 and claim.owner.startswith("w1#")
    job = job_row(svc, claim.job_id)
    assert job.status == JobStatus.RUNNING and job.lease_owner == claim.owner
    assert job.lease_expires_at == clock.now + timedelta(seconds=LEASE)
    assert phases(svc, claim.job_id) == ["queued", "started"]
    other = queue.claim("w2", lease_s=LEASE)
    assert other is not None and other.submission_id == second
    assert queue.claim("w3", lease_s=LEASE) is None


def test_claim_filters_devices_and_submission(svc: LeaderboardService, queue: JobQueue) -> None:
    sub = submit(svc, devices=["H100"])
    mine = submit(svc, devices=["cpu"])
    assert queue.claim("w", lease_s=LEASE, devices=["A100"]) is None
    assert queue.claim("w", lease_s=LEASE, submission_id=sub + 100) is None
    claim = queue.claim("w", lease_s=LEASE, devices=["cpu"])
    assert claim is not None and claim.submission_id == mine and claim.device == "cpu"
    claim = queue.claim("w", lease_s=LEASE, submission_id=sub)
    assert claim is not None and claim.device == "H100"


def test_concurrent_claims_never_share_a_job(svc: LeaderboardService, clock: Clock) -> None:
    for _ in range(12):
        submit(svc)
    claimed: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        q = JobQueue(svc.db, clock=clock, db_retry_s=30)
        try:
            while (c := q.claim(name, lease_s=LEASE)) is not None:
                with lock:
                    claimed.append(c.job_id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert len(claimed) == 12 and len(set(claimed)) == 12


def test_heartbeat_renews_and_expired_lease_is_taken_over(
    svc: LeaderboardService, queue: JobQueue, clock: Clock
) -> None:
    submit(svc)
    old = queue.claim("w1", lease_s=LEASE)
    assert old is not None
    clock.advance(LEASE - 1)
    assert queue.heartbeat(old, lease_s=LEASE)
    clock.advance(LEASE - 1)
    assert queue.claim("w2", lease_s=LEASE) is None  # renewed: not expired yet
    clock.advance(2)
    new = queue.claim("w2", lease_s=LEASE)
    assert new is not None and new.job_id == old.job_id and new.attempt == 2
    assert not queue.heartbeat(old, lease_s=LEASE)
    with pytest.raises(LeaseLost):
        queue.set_remote_ref(old, "stale")
    # The worker that lost its lease cannot store a result, even if it finishes first.
    with pytest.raises(LeaseLost):
        svc.record_run(old.job_id, run_result(), owner=old.owner)
    svc.record_run(new.job_id, run_result(), owner=new.owner)
    with svc.db.transaction() as s:
        assert s.scalar(select(Run.id).where(Run.job_id == new.job_id)) is not None
    assert "started" in phases(svc, new.job_id)


def test_remote_ref_survives_lease_expiry_for_reattach(svc: LeaderboardService, queue: JobQueue, clock: Clock) -> None:
    submit(svc)
    first = queue.claim("w1", lease_s=LEASE)
    assert first is not None and first.remote_ref is None
    queue.set_remote_ref(first, "fc-123")
    clock.advance(LEASE + 1)
    second = queue.claim("w2", lease_s=LEASE)
    assert second is not None and second.remote_ref == "fc-123"


def test_retry_backs_off_then_fails_as_not_your_fault(svc: LeaderboardService, queue: JobQueue, clock: Clock) -> None:
    submit(svc)
    claim = queue.claim("w", lease_s=LEASE)
    assert claim is not None
    queue.set_remote_ref(claim, "run-1")
    out = queue.retry_or_fail(claim, "runner lost", backoff_base_s=10, backoff_max_s=100)
    assert out.status == JobStatus.QUEUED and out.next_attempt_at == clock.now + timedelta(seconds=10)
    job = job_row(svc, claim.job_id)
    assert job.lease_owner is None and job.remote_ref is None and "not your fault" in (job.error or "")
    assert queue.claim("w", lease_s=LEASE) is None  # backing off
    clock.advance(10)
    claim = queue.claim("w", lease_s=LEASE)
    assert claim is not None and claim.attempt == 2
    out = queue.retry_or_fail(claim, "runner lost", backoff_base_s=10, backoff_max_s=100)
    assert out.next_attempt_at == clock.now + timedelta(seconds=20)
    clock.advance(20)
    claim = queue.claim("w", lease_s=LEASE)
    assert claim is not None and claim.attempt == 3
    out = queue.retry_or_fail(claim, "runner lost", backoff_base_s=10, backoff_max_s=100)
    assert out.status == JobStatus.FAILED
    job = job_row(svc, claim.job_id)
    assert job.status == JobStatus.FAILED and job.finished_at is not None
    assert "not your fault" in (job.error or "") and "tried 3 times" in (job.error or "")
    assert phases(svc, claim.job_id)[-1] == "failed"
    with pytest.raises(LeaseLost):
        queue.retry_or_fail(claim, "again", backoff_base_s=1, backoff_max_s=1)


def test_lease_expiring_on_last_attempt_fails_the_job(svc: LeaderboardService, queue: JobQueue, clock: Clock) -> None:
    submit(svc)
    for attempt in range(1, 4):
        claim = queue.claim(f"w{attempt}", lease_s=LEASE)
        assert claim is not None and claim.attempt == attempt
        clock.advance(LEASE + 1)  # the worker died
    assert queue.claim("w9", lease_s=LEASE) is None
    job = job_row(svc, claim.job_id)
    assert job.status == JobStatus.FAILED and "not your fault" in (job.error or "")


def test_release_requeues_without_counting_the_attempt(svc: LeaderboardService, queue: JobQueue) -> None:
    submit(svc)
    claim = queue.claim("w", lease_s=LEASE)
    assert claim is not None
    assert queue.release(claim)
    assert not queue.release(claim)
    again = queue.claim("w", lease_s=LEASE)
    assert again is not None and again.job_id == claim.job_id and again.attempt == 1


def test_cancelled_job_loses_its_lease(svc: LeaderboardService, queue: JobQueue) -> None:
    sub = submit(svc)
    claim = queue.claim("w", lease_s=LEASE)
    assert claim is not None
    svc.cancel(sub, UserRef("ann"))
    assert not queue.heartbeat(claim, lease_s=LEASE)
    with pytest.raises(LeaseLost):
        svc.record_run(claim.job_id, run_result(), owner=claim.owner)


def test_complete_keeps_owner_for_retried_commits(svc: LeaderboardService, queue: JobQueue) -> None:
    submit(svc, mode="test")
    claim = queue.claim("w", lease_s=LEASE)
    assert claim is not None
    with svc.db.transaction() as s:
        svc.record_run(claim.job_id, run_result(), owner=claim.owner, session=s)
        queue.complete(s, claim, detail="accepted")
    assert queue.finished_by(claim)
    job = job_row(svc, claim.job_id)
    assert job.status == JobStatus.SUCCEEDED and job.lease_expires_at is None
    assert phases(svc, claim.job_id)[-1] == "done"


def test_workers_alive_by_heartbeat_and_device(svc: LeaderboardService, queue: JobQueue, clock: Clock) -> None:
    assert queue.alive_workers() == []
    queue.register_worker("gpu-box", ["H100"])
    queue.register_worker("any", [])
    assert sorted(queue.alive_workers(device="h100")) == ["any", "gpu-box"]
    queue.stop_worker("any")
    assert queue.alive_workers(device="cpu") == []
    clock.advance(120)
    assert queue.alive_workers(within_s=60) == []
    queue.worker_heartbeat("gpu-box")
    assert queue.alive_workers(device="H100", within_s=60) == ["gpu-box"]


def test_backoff_doubles_and_caps() -> None:
    assert [backoff_s(a, 5, 30) for a in (1, 2, 3, 4, 5)] == [5, 10, 20, 30, 30]


def test_db_retry_survives_a_dropped_connection(svc: LeaderboardService) -> None:
    """A transaction whose connection dies is retried on a fresh connection (real pg_terminate_backend)."""
    calls = []

    def tx() -> int:
        calls.append(1)
        with svc.db.transaction() as s:
            if len(calls) == 1:
                if svc.db.is_sqlite:
                    raise OperationalError("SELECT 1", {}, Exception("database is locked"))
                s.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
            return int(s.scalar(text("SELECT 41 + 1")) or 0)

    assert with_db_retry(tx, budget_s=10) == 42
    assert len(calls) == 2


def test_db_retry_does_not_retry_other_errors() -> None:
    calls = []

    def boom() -> None:
        calls.append(1)
        raise ValueError("bug")

    with pytest.raises(ValueError):
        with_db_retry(boom, budget_s=10)
    assert len(calls) == 1
