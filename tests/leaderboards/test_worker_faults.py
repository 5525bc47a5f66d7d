"""Fault tests with real processes and real connections: a worker SIGKILLed mid-job, a database connection
killed mid-job (PostgreSQL ``pg_terminate_backend``). On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import create_engine, select, text

from leaderboards.models import Job, JobEvent, JobStatus, Run
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import RunRequest, RunResult
from runners.launchers.base import JobHandle
from runners.launchers.fake import FakeLauncher

REPO = Path(__file__).resolve().parents[2]

# A worker process whose launcher starts a "remote" run (stores its reference), reports progress, then hangs.
KILLED_WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from leaderboards.db import Database, make_engine
    from leaderboards.service import LeaderboardService
    from leaderboards.settings import CoreSettings
    from leaderboards.worker import Worker, WorkerSettings
    from runners.contract import Phase, ProgressEvent
    from runners.launchers.fake import FakeLauncher

    async def hang(request, job):
        await job.set_remote_ref("remote-run-1")
        await job.progress(ProgressEvent(phase=Phase.BENCHMARKING, detail="about to be killed"))
        await asyncio.sleep(3600)

    hanging = FakeLauncher(name="hanging", steps=[hang], progress=(), remote_refs=False)

    db = Database(make_engine(sys.argv[1]))
    settings = WorkerSettings(_env_file=None, lease_s=2.0, heartbeat_s=0.3, poll_s=0.05)
    service = LeaderboardService(db, CoreSettings(_env_file=None))
    worker = Worker(service, lambda device: hanging, settings, worker_id="doomed")
    asyncio.run(worker.run())
    """
)


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    return service


def url_of(svc: LeaderboardService) -> str:
    return svc.db.engine.url.render_as_string(hide_password=False)


def wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def job_of(svc: LeaderboardService, submission_id: int) -> Job:
    with svc.db.transaction() as s:
        job = s.scalar(select(Job).where(Job.submission_id == submission_id))
        assert job is not None
        s.expunge(job)
        return job


def test_sigkilled_worker_loses_nothing(svc: LeaderboardService) -> None:
    sub = svc.submit(UserRef("ann"), "s.py", b"def custom_kernel(d):\n    return d\n", "add", ["cpu"], "ranked")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WORKER, url_of(svc)], cwd=REPO, env=env)
    try:
        wait_for(lambda: job_of(svc, sub.submission_id).remote_ref == "remote-run-1", 60, "the doomed worker's run")
        job = job_of(svc, sub.submission_id)
        assert job.status == JobStatus.RUNNING and job.lease_owner and job.lease_owner.startswith("doomed#")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)

    launcher = FakeLauncher(lambda request: run_result(mode=request.mode), name="reattaching", progress=(),
                            remote_refs=False)  # fmt: skip
    settings = WorkerSettings(_env_file=None, lease_s=5, heartbeat_s=0.2, poll_s=0.05)
    worker = Worker(svc, lambda device: launcher, settings, worker_id="survivor")
    started = time.monotonic()
    asyncio.run(asyncio.wait_for(worker.run(until=lambda: bool(worker.reports)), 60))
    waited = time.monotonic() - started
    assert waited < 10  # the lease (2 s) ran out, then the survivor took over

    job = job_of(svc, sub.submission_id)
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2
    assert job.lease_owner is not None and job.lease_owner.startswith("survivor#")
    assert launcher.refs_seen == ["remote-run-1", None]  # re-attached to the killed worker's remote run
    with svc.db.transaction() as s:
        runs = s.scalars(select(Run).where(Run.job_id == job.id)).all()
        events = list(s.scalars(select(JobEvent.detail).where(JobEvent.job_id == job.id, JobEvent.phase == "started")))
    assert sorted(r.secret for r in runs) == [False, True]  # exactly one result per kind
    assert len(events) == 2 and "expired" in events[1]
    assert [e.submission_id for e in svc.ranking("add", "cpu").entries] == [sub.submission_id]


def test_connection_killed_during_job_loses_nothing(svc: LeaderboardService) -> None:
    """PostgreSQL: every backend of the worker is terminated while its job runs (and again before it stores).
    SQLite has no server connection to kill; there the engine's pool is thrown away mid-job instead."""
    sub = svc.submit(UserRef("ann"), "s.py", b"def custom_kernel(d):\n    return d\n", "add", ["cpu"], "ranked")
    kills: list[int] = []

    def kill_connections() -> None:
        if svc.db.is_sqlite:
            svc.db.engine.pool.dispose()
            kills.append(1)
            return
        admin = create_engine(url_of(svc), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            n = conn.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND application_name = 'kc-fault-test'"
                )
            ).scalar()
            kills.append(int(n or 0))
        admin.dispose()

    if not svc.db.is_sqlite:  # tag the worker's connections so only they are killed
        from leaderboards.db import Database, make_engine

        engine = make_engine(url_of(svc), connect_args={"application_name": "kc-fault-test"})
        svc = LeaderboardService(Database(engine), svc.settings)

    async def killing(request: RunRequest, job: JobHandle) -> RunResult:
        await asyncio.to_thread(kill_connections)
        await asyncio.sleep(0.5)  # heartbeats hit the dead connections meanwhile
        result = run_result(mode=request.mode)
        await asyncio.to_thread(kill_connections)  # and the result is stored on a fresh one
        return result

    launcher = FakeLauncher(name="killing", steps=[killing, killing], progress=(), remote_refs=False)  # both runs

    settings = WorkerSettings(_env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.05)
    worker = Worker(svc, lambda device: launcher, settings)
    asyncio.run(asyncio.wait_for(worker.run(until=lambda: bool(worker.reports)), 60))
    assert kills and (svc.db.is_sqlite or max(kills) >= 1)
    job = job_of(svc, sub.submission_id)
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 1
    with svc.db.transaction() as s:
        assert sorted(s.scalars(select(Run.secret).where(Run.job_id == job.id))) == [False, True]
    svc.db.dispose()
