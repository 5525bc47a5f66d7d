"""Issue 11, item 1: a run the worker lets go of is killed at once, whole process tree, and the job's events say so.

Real local launcher, real evaluation process (a submission that spins forever), on SQLite and PostgreSQL: the job
is cancelled by its author, its lease is taken by another worker, or the worker is stopped past its grace period.
Before the fix the run's thread could not be cancelled and its process ran on for tens of seconds beside the next
job on the same device.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from sqlalchemy import select, update

from leaderboards.models import Job, JobEvent, JobStatus
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.local import LocalLauncher
from runners.settings import RunnerSettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "problems"
SPIN = b"def custom_kernel(data):\n    while True:\n        pass\n"
SETTINGS = WorkerSettings(_env_file=None, lease_s=5, heartbeat_s=0.2, poll_s=0.05, stop_grace_s=0.3)


@pytest.fixture
def svc(service: LeaderboardService) -> LeaderboardService:
    service.create_leaderboard(load_problem(FIXTURES / "vectoradd"), name="va", deadline=_future(), devices=["cpu"])
    return service


def _future():  # type: ignore[no-untyped-def]
    from helpers import future

    return future()


def runs_under(root: Path) -> list[psutil.Process]:
    """Processes working inside a job folder under ``root`` (a run's init, sandbox and evaluation process)."""
    found = []
    for proc in psutil.process_iter():
        try:
            cwd = Path(proc.cwd())
        except (psutil.Error, OSError):
            continue
        if root in cwd.parents:
            found.append(proc)
    return found


async def run_until_spinning(
    worker: Worker, root: Path, stop: asyncio.Event, svc: LeaderboardService, job_id: int
) -> asyncio.Task[object]:
    """Start the worker and wait until its run is testing the spinning file: its processes exist AND the job's
    events say it reached its tests (on a loaded machine the sandbox's processes exist seconds before the run has
    started its tests, and a job let go while still starting was not yet the case under test)."""
    task = asyncio.create_task(worker.run(stop))
    deadline = time.monotonic() + 60
    while not runs_under(root) or not any(p == "testing" for p, _ in events(svc, job_id)):
        assert time.monotonic() < deadline, f"the run never started its tests: {events(svc, job_id)}"
        assert not task.done(), task
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # let the harness get into custom_kernel
    return task


def events(svc: LeaderboardService, job_id: int) -> list[tuple[str, str]]:
    with svc.db.transaction() as s:
        rows = s.execute(select(JobEvent.phase, JobEvent.detail).where(JobEvent.job_id == job_id).order_by(JobEvent.id))
        return [(p, d) for p, d in rows]


def killed_within(root: Path, timeout_s: float) -> float:
    start = time.monotonic()
    while runs_under(root):
        if time.monotonic() - start > timeout_s:
            alive = [p.pid for p in runs_under(root)]
            raise AssertionError(f"the run's processes {alive} were still alive {timeout_s} s after letting go")
        time.sleep(0.02)
    return time.monotonic() - start


def case(
    svc: LeaderboardService,
    tmp_path: Path,
    let_go: Callable[[LeaderboardService, int, asyncio.Event, asyncio.Task[object]], None],
) -> tuple[int, float, list[tuple[str, str]]]:
    root = (tmp_path / "jobs").resolve()
    root.mkdir()
    receipt = svc.submit(UserRef("ann"), "spin.py", SPIN, "va", ["cpu"], "test")
    job_id = receipt.jobs[0].job_id
    launcher = LocalLauncher(RunnerSettings(_env_file=None, job_root=root, allow_unsandboxed=True))
    worker = Worker(svc, lambda device: launcher, SETTINGS)

    async def main() -> float:
        stop = asyncio.Event()
        task = await run_until_spinning(worker, root, stop, svc, job_id)
        let_go(svc, job_id, stop, task)
        t0 = time.monotonic()
        while runs_under(root):
            assert time.monotonic() - t0 < 5, "the run outlived its job by 5 s"
            await asyncio.sleep(0.02)
        took = time.monotonic() - t0
        stop.set()
        await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 30)
        return took

    took = asyncio.run(main())
    assert not list(root.glob("kernelcup-job-*")), "the killed run's job folder was left behind"
    return job_id, took, events(svc, job_id)


def test_cancelled_job_kills_its_run(svc: LeaderboardService, tmp_path: Path) -> None:
    job_id, took, evs = case(svc, tmp_path, lambda s, _job, _stop, _task: s.cancel(1, UserRef("ann")))
    assert took < SETTINGS.heartbeat_s + 2
    assert ("cancelled", "cancelled by its author") in evs
    assert any(p == "killed" and "lease" in d for p, d in evs), evs
    with svc.db.transaction() as s:
        assert s.get(Job, job_id).status == JobStatus.CANCELLED  # type: ignore[union-attr]


def test_lease_taken_over_kills_the_old_run(svc: LeaderboardService, tmp_path: Path) -> None:
    def take_over(s: LeaderboardService, job_id: int, _stop: asyncio.Event, _task: object) -> None:
        with s.db.transaction() as session:
            session.execute(update(Job).where(Job.id == job_id).values(lease_owner="another-worker#1"))

    _, took, evs = case(svc, tmp_path, take_over)
    assert took < SETTINGS.heartbeat_s + 2
    assert any(p == "killed" for p, _ in evs), evs


def test_stopping_worker_kills_the_run_and_requeues_the_job(svc: LeaderboardService, tmp_path: Path) -> None:
    job_id, took, evs = case(svc, tmp_path, lambda _s, _job, stop, _task: stop.set())
    assert took < SETTINGS.stop_grace_s + 2
    assert any(p == "killed" and "stopped" in d for p, d in evs), evs
    with svc.db.transaction() as s:
        job = s.get(Job, job_id)
        assert job is not None and job.status == JobStatus.QUEUED and job.attempts == 0  # not charged


def test_stopping_at_once_kills_the_run_too(svc: LeaderboardService, tmp_path: Path) -> None:
    """A second SIGTERM cancels the worker itself (``kernelcup worker``): the run must die with it, not run on."""
    job_id, took, evs = case(svc, tmp_path, lambda _s, _job, _stop, task: task.cancel())
    assert took < 2
    assert any(p == "killed" and "at once" in d for p, d in evs), evs
    with svc.db.transaction() as s:
        job = s.get(Job, job_id)
        assert job is not None and job.status == JobStatus.QUEUED and job.attempts == 0
