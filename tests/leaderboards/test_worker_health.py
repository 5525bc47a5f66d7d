"""Workers that survive and blame no one wrongly (issue 11, items 2 and 4), on SQLite and PostgreSQL.

- A broken worker (its runner fails its self-check: a full job disk, a broken interpreter) beside a healthy one
  stops claiming after its first failure, says why in ``queue_stats``, and the job it failed is not charged: every
  submission ends accepted. Before, the broken worker failed instantly, won most claims and drained the queue.
- A worker that fails N different jobs in a row stops claiming too, and probes itself before claiming again.
- A database outage while a job finishes: the result is kept and stored when the database is back (no attempt
  charged, no second run); a result left on disk by a killed worker is stored by the next one; a worker starts
  while the database is unreachable and never crashes on a database error.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from leaderboards.models import Job, JobEvent, JobStatus
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.spool import ResultSpool
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import RunResult
from runners.launchers.base import LauncherError
from runners.launchers.fake import FakeLauncher

FAST = dict(_env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.01, backoff_base_s=0, backoff_max_s=0)


def fake_launcher(name: str, *, delay_s: float = 0.0, error: str = "", broken: str = "") -> FakeLauncher:
    """The shipped fake: answers after ``delay_s`` with an accepted result, or fails every run with ``error``;
    ``check`` fails while ``broken`` (its ``check_error``) is set. No progress, no remote reference."""
    return FakeLauncher(
        lambda request: run_result(mode=request.mode),
        name=name,
        delay_s=delay_s,
        error=LauncherError(error) if error else None,
        check_error=LauncherError(broken) if broken else None,
        progress=(),
        remote_refs=False,
    )


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    return service


def submit_many(svc: LeaderboardService, n: int, mode: str = "test") -> list[int]:
    return [
        svc.submit(
            UserRef(f"u{i}"), "s.py", f"def custom_kernel(d):  # {i}\n    return d\n".encode(), "add", ["cpu"], mode
        )
        .jobs[0]
        .job_id
        for i in range(n)
    ]


def jobs(svc: LeaderboardService) -> list[Job]:
    with svc.db.transaction() as s:
        rows = s.scalars(select(Job).order_by(Job.id)).all()
        for r in rows:
            s.expunge(r)
        return list(rows)


def all_done(svc: LeaderboardService) -> bool:
    return all(j.status not in (JobStatus.QUEUED, JobStatus.RUNNING) for j in jobs(svc))


async def serve_together(*workers: Worker, until: Any, timeout_s: float = 60) -> None:
    stop = asyncio.Event()
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]
    try:
        for _ in range(int(timeout_s / 0.05)):
            if await asyncio.to_thread(until):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the queue did not drain")
    finally:
        stop.set()
        await asyncio.gather(*tasks)


def test_a_broken_worker_stops_claiming_and_its_failure_is_not_charged(svc: LeaderboardService) -> None:
    submit_many(svc, 12)
    broken = fake_launcher("local", error="the runner failed: OSError: [Errno 28] No space left on device",
                      broken="cannot write job folders in /tmp (No space left on device)")  # fmt: skip
    healthy = fake_launcher("local", delay_s=0.05)
    bad = Worker(svc, lambda d: broken, WorkerSettings(**FAST, probe_s=3600), worker_id="broken-box")
    good = Worker(svc, lambda d: healthy, WorkerSettings(**FAST), worker_id="healthy-box")
    seen: list[Any] = []

    def drained() -> bool:
        seen.append(svc.queue_stats())
        return all_done(svc)

    asyncio.run(serve_together(bad, good, until=drained))
    done = jobs(svc)
    assert [j.status for j in done] == [JobStatus.SUCCEEDED] * 12, [(j.id, j.status, j.error) for j in done]
    assert all(j.attempts == 1 for j in done), "a job failed by the broken worker was charged an attempt"
    took = len(broken.requests)
    assert took == 1, f"the broken worker took {took} jobs; it should stop after its first failure"
    assert not bad.healthy and good.healthy
    views = {w.worker_id: w for w in seen[-1].workers}
    assert not views["broken-box"].healthy and "No space left" in views["broken-box"].health_note
    assert views["healthy-box"].healthy
    with svc.db.transaction() as s:
        notes = s.scalars(select(JobEvent.detail).where(JobEvent.phase == "queued", JobEvent.detail != "")).all()
    assert any("broken-box is unhealthy" in n and "not counted" in n for n in notes), notes


def test_n_different_jobs_failing_in_a_row_make_a_worker_unhealthy_until_it_probes_well(
    svc: LeaderboardService,
) -> None:
    submit_many(svc, 3)
    flaky = fake_launcher("flaky", error="lost the GPU")
    settings = WorkerSettings(**FAST, unhealthy_after=2, probe_s=0.2)
    worker = Worker(svc, lambda d: flaky, settings, worker_id="flaky-box")

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        for _ in range(400):
            if not worker.healthy:
                break
            await asyncio.sleep(0.01)
        assert not worker.healthy
        runs_when_unhealthy = len(flaky.requests)
        for _ in range(200):  # the flag is stored right after it flips in memory; on a loaded machine, a moment later
            views = await asyncio.to_thread(svc.queue_stats)
            if not views.workers[0].healthy:
                break
            await asyncio.sleep(0.02)
        assert not views.workers[0].healthy and "2 different jobs in a row" in views.workers[0].health_note
        await asyncio.sleep(0.05)
        assert len(flaky.requests) == runs_when_unhealthy, "an unhealthy worker claimed another job"
        flaky.error = None  # the GPU is back: the next probe passes and the worker serves again
        for _ in range(400):
            if await asyncio.to_thread(all_done, svc):
                break
            await asyncio.sleep(0.02)
        assert worker.healthy and (await asyncio.to_thread(svc.queue_stats)).workers[0].healthy
        stop.set()
        await task

    asyncio.run(main())
    done = jobs(svc)
    assert all(j.status == JobStatus.SUCCEEDED for j in done)
    assert [j.attempts for j in done] == [2, 1, 1]  # the first failure was charged; the second made it unhealthy


def test_self_check_at_start(svc: LeaderboardService) -> None:
    submit_many(svc, 1)
    launcher = fake_launcher("local", broken="the evaluation interpreter /nope does not start; check KERNELCUP_PYTHON")
    worker = Worker(svc, lambda d: launcher, WorkerSettings(**FAST), devices=["cpu"])
    asyncio.run(asyncio.wait_for(worker.run(once=True), 30))
    assert len(launcher.requests) == 0 and not worker.healthy
    assert jobs(svc)[0].status == JobStatus.QUEUED and jobs(svc)[0].attempts == 0


def outage(monkeypatch: pytest.MonkeyPatch, svc: LeaderboardService, seconds: float) -> list[float]:
    """Make storing a result fail as if the database were unreachable for ``seconds`` from the first try."""
    import time

    original = svc.record_run
    first: list[float] = []

    def record_run(*args: Any, **kwargs: Any) -> Any:
        now = time.monotonic()
        first[:] = first or [now]
        if now - first[0] < seconds:
            raise OperationalError("INSERT INTO runs", {}, Exception("server closed the connection unexpectedly"))
        return original(*args, **kwargs)

    monkeypatch.setattr(svc, "record_run", record_run)
    return first


def test_a_result_outlives_a_database_outage_longer_than_the_retry_budget(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    submit_many(svc, 1, mode="ranked")
    outage(monkeypatch, svc, 1.5)
    launcher = fake_launcher("local")
    spool = ResultSpool(tmp_path / "spool")
    worker = Worker(svc, lambda d: launcher, WorkerSettings(**FAST, db_retry_s=0.3), spool=spool)
    asyncio.run(asyncio.wait_for(worker.run(once=True), 60))
    (job,) = jobs(svc)
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 1
    assert len(launcher.requests) == 2  # the public and the secret run, once each: nothing thrown away and run again
    assert not list((tmp_path / "spool").glob("*.json"))


def test_a_result_left_on_disk_by_a_killed_worker_is_stored_by_the_next_one(
    svc: LeaderboardService, tmp_path: Path
) -> None:
    (job_id,) = submit_many(svc, 1)
    claim = JobQueue(svc.db).claim("killed-worker", lease_s=5)
    assert claim is not None
    spool = ResultSpool(tmp_path / "spool")
    spool.put(claim, False, True, run_result(mode=claim_mode(svc, job_id)))
    launcher = fake_launcher("local")
    worker = Worker(svc, lambda d: launcher, WorkerSettings(**FAST), spool=ResultSpool(tmp_path / "spool"))
    asyncio.run(asyncio.wait_for(worker.run(once=True), 30))
    (job,) = jobs(svc)
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 1 and job.lease_owner == claim.owner
    assert len(launcher.requests) == 0 and not list((tmp_path / "spool").glob("*.json"))


def claim_mode(svc: LeaderboardService, job_id: int) -> Any:
    return svc.run_requests(job_id)[0].request.mode


def test_a_worker_starts_while_the_database_is_unreachable_and_never_crashes_on_it(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch
) -> None:
    submit_many(svc, 2)
    queue = JobQueue(svc.db, db_retry_s=0.1)
    down = itertools.count()
    register, retry_or_fail = queue.register_worker, queue.retry_or_fail

    def flaky_register(*args: Any, **kwargs: Any) -> None:
        if next(down) < 2:
            raise OperationalError("SELECT", {}, Exception("could not connect to server: Connection refused"))
        register(*args, **kwargs)

    def dead_retry(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("UPDATE jobs", {}, Exception("terminating connection due to administrator command"))

    monkeypatch.setattr(queue, "register_worker", flaky_register)
    monkeypatch.setattr(queue, "retry_or_fail", dead_retry)
    launcher = fake_launcher("local", error="runner lost")
    worker = Worker(svc, lambda d: launcher, WorkerSettings(**FAST, unhealthy_after=99), queue=queue)
    monkeypatch.setattr(worker, "_register", _fast_register(worker))
    reports = asyncio.run(asyncio.wait_for(worker.run(once=True), 60))
    assert [r.status for r in reports] == ["abandoned", "abandoned"]
    monkeypatch.setattr(queue, "retry_or_fail", retry_or_fail)
    assert all(j.status == JobStatus.RUNNING for j in jobs(svc))  # left to their leases, nothing charged wrongly


def _fast_register(worker: Worker) -> Any:
    """The worker's own registration loop, with the waits between tries shortened."""

    async def register(stop: asyncio.Event) -> bool:
        for _ in range(10):
            try:
                await worker._db(worker.queue.register_worker, worker.worker_id, worker.devices)
                return True
            except OperationalError:
                await asyncio.sleep(0.01)
        return False

    return register


def test_a_problem_fault_fails_its_job_once_and_never_makes_the_worker_unhealthy(svc: LeaderboardService) -> None:
    """The hostile-problem review (2026-11-24): a problem whose own code fails (``RunResult.fault`` "problem") was an
    infrastructure failure: each job was retried, and after ``unhealthy_after`` of them the worker stopped serving
    every leaderboard. Now each job fails at once, saying whose fault it is, and the worker stays healthy."""
    submit_many(svc, 3)
    broken = FakeLauncher(
        lambda request: RunResult.infrastructure_error(
            request.mode, "the problem 'add' failed: its generate_input(size=3, seed=1) failed", fault="problem"
        ),
        name="local", progress=(), remote_refs=False,
    )  # fmt: skip
    worker = Worker(svc, lambda d: broken, WorkerSettings(**FAST, unhealthy_after=2, probe_s=0.2), worker_id="box")

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        for _ in range(400):
            if await asyncio.to_thread(all_done, svc):
                break
            assert worker.healthy
            await asyncio.sleep(0.02)
        stop.set()
        await task

    asyncio.run(main())
    done = jobs(svc)
    assert [j.status for j in done] == [JobStatus.FAILED] * 3 and [j.attempts for j in done] == [1, 1, 1]
    assert all("not your submission's fault" in (j.error or "") for j in done), [j.error for j in done]
    assert len(broken.requests) == 3 and worker.healthy
