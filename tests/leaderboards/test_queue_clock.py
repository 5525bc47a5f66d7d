"""Leases run on the database's clock, not each worker's: a worker whose wall clock is ahead (an NTP step, a resumed
VM, a skewed host) neither takes a live worker's job nor fails it as given up. On SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import future, make_problem
from sqlalchemy import select, update

import leaderboards.models
from leaderboards.db import database_now
from leaderboards.models import Job, JobEvent, JobStatus, utcnow
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.fake import FakeLauncher

LEASE = 60.0
SKEW = timedelta(minutes=5)


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    return service


@contextmanager
def host_clock_ahead(monkeypatch: pytest.MonkeyPatch, by: timedelta) -> Iterator[None]:
    """This process's wall clock runs ``by`` ahead (``utcnow``, the function every default clock is, included)."""

    class Ahead(dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return dt.datetime.now(tz) + by

    with monkeypatch.context() as m:
        m.setattr(leaderboards.models, "datetime", Ahead)
        yield


def worker_of(svc: LeaderboardService, worker_id: str) -> Worker:
    """A worker built as ``kernelcup worker`` builds it (its queue made by the worker from the service)."""
    return Worker(svc, lambda device: FakeLauncher(), WorkerSettings(_env_file=None), worker_id=worker_id)


def submit(svc: LeaderboardService, user: str) -> int:
    code = f"def custom_kernel(d):\n    return d  # {user}\n".encode()
    sub = svc.submit(UserRef(user), "s.py", code, "add", ["cpu"], "test").submission_id
    with svc.db.transaction() as s:
        return int(s.scalar(select(Job.id).where(Job.submission_id == sub)) or 0)


@pytest.mark.parametrize("attempts_before", [0, 2], ids=["first attempt", "last attempt"])
def test_a_worker_whose_clock_runs_ahead_does_not_take_or_fail_a_live_job(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch, attempts_before: int
) -> None:
    job_id = submit(svc, "ann")
    with svc.db.transaction() as s:  # on the last attempt, an expired lease fails the job instead of retaking it
        s.execute(update(Job).where(Job.id == job_id).values(attempts=attempts_before, max_attempts=3))
    live = worker_of(svc, "live")
    claim = live.queue.claim("live", lease_s=LEASE, devices=["cpu"])
    assert claim is not None and claim.job_id == job_id
    assert live.queue.heartbeat(claim, lease_s=LEASE)

    with host_clock_ahead(monkeypatch, SKEW):
        assert utcnow() - dt.datetime.now(dt.UTC) > SKEW - timedelta(seconds=5)  # the skew is in place
        skewed = worker_of(svc, "skewed")
        assert skewed.queue.claim("skewed", lease_s=LEASE, devices=["cpu"]) is None
        with svc.db.transaction() as s:  # its own job goes to it; the live worker's stays where it is
            assert abs(database_now(s) - dt.datetime.now(dt.UTC)) < timedelta(seconds=5)

    with svc.db.transaction() as s:
        job = s.get(Job, job_id)
        assert job is not None
        assert (job.status, job.lease_owner, job.error) == (JobStatus.RUNNING.value, claim.owner, None)
        assert job.attempts == attempts_before + 1
        started = list(s.scalars(select(JobEvent.detail).where(JobEvent.job_id == job_id, JobEvent.phase == "started")))
        assert len(started) == 1 and "live" in started[0]
    assert live.queue.heartbeat(claim, lease_s=LEASE)


def test_a_worker_whose_clock_lags_cannot_keep_a_dead_workers_job(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other way round: a lease written by a host whose clock runs ahead does not outlive its worker."""
    job_id = submit(svc, "ann")
    with host_clock_ahead(monkeypatch, SKEW):
        dead = worker_of(svc, "dead").queue.claim("dead", lease_s=1.0, devices=["cpu"])
    assert dead is not None and dead.job_id == job_id
    with svc.db.transaction() as s:
        expires = s.scalar(select(Job.lease_expires_at).where(Job.id == job_id))
        assert expires is not None and expires - database_now(s) < timedelta(seconds=2)


def test_simulated_clock_still_stands_in_for_the_database(svc: LeaderboardService) -> None:
    """Tests (and only tests) give the queue a clock; a worker on a service with the wall clock uses the database's."""
    assert worker_of(svc, "w").queue.clock is None
    fixed = utcnow() + timedelta(days=1)
    assert JobQueue(svc.db, clock=lambda: fixed).claim("w", lease_s=LEASE) is None  # nothing queued
    submit(svc, "bob")
    claim = JobQueue(svc.db, clock=lambda: fixed).claim("w", lease_s=LEASE)
    assert claim is not None and claim.claimed_at == fixed


def test_the_event_of_a_taken_over_lease_says_whether_its_worker_was_alive(svc: LeaderboardService) -> None:
    """An expired lease whose worker still heartbeats is a stalled run or connection, not a dead worker: the
    ``started`` event of the claim that takes the job over says which."""
    now = utcnow()
    at = {"now": now}
    queue = JobQueue(svc.db, clock=lambda: at["now"])
    queue.register_worker("stalled", ["cpu"])
    stalled_job, dead_job = submit(svc, "ann"), submit(svc, "bob")
    first = queue.claim("stalled", lease_s=LEASE, devices=["cpu"])
    second = queue.claim("dead", lease_s=LEASE, devices=["cpu"])
    assert first is not None and second is not None
    at["now"] = now + timedelta(seconds=LEASE + 30)
    queue.worker_heartbeat("stalled")  # alive, but it did not renew its job's lease
    taken = {c.job_id for c in (queue.claim("w2", lease_s=LEASE), queue.claim("w2", lease_s=LEASE)) if c}
    assert taken == {stalled_job, dead_job}
    with svc.db.transaction() as s:
        rows = s.execute(select(JobEvent.job_id, JobEvent.detail).where(JobEvent.phase == "started")).all()
    latest = {job_id: detail for job_id, detail in sorted(rows, key=lambda r: len(r[1])) if "w2" in detail}
    owner = {first.job_id: first.owner, second.job_id: second.owner}
    alive = latest[first.job_id]
    assert f"the lease of {owner[first.job_id]} expired 30 s ago without renewal" in alive and "stalled" in alive
    gone = latest[second.job_id]
    assert f"the lease of {owner[second.job_id]} expired 30 s ago" in gone and "stalled" not in gone
