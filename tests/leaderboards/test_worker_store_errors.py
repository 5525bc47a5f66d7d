"""A database error that never goes away while a worker stores a finished result ends the job the way any internal
error does (another attempt, then failed as the platform's fault), instead of leaving it "running" for good while
the heartbeat keeps its lease; a transient one (the database down, a lock busy) is still waited out. Which errors
pass is ``transient_db_error``'s to say. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, OperationalError

from leaderboards.models import Job, JobStatus
from leaderboards.queue import transient_db_error, with_db_retry
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.worker import STORE_TRIES, Worker, WorkerSettings
from runners.launchers.fake import FakeLauncher


class PgError(Exception):
    """A psycopg error as the driver raises it: with its SQLSTATE (None: libpq's own, the connection failed)."""

    def __init__(self, message: str, pgcode: str | None) -> None:
        super().__init__(message)
        self.pgcode = pgcode


def sqlite_error(message: str, code: int) -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError(message)
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]  # set by sqlite3 itself when it raises
    return exc


def op(orig: BaseException) -> OperationalError:
    return OperationalError("INSERT INTO runs", {}, orig)


@pytest.mark.parametrize(
    ("orig", "transient"),
    [
        (PgError("server closed the connection unexpectedly", None), True),
        (PgError("terminating connection due to administrator command", "57P01"), True),
        (PgError("the database system is starting up", "57P03"), True),
        (PgError("connection failure", "08006"), True),
        (PgError("could not serialize access", "40001"), True),
        (PgError("deadlock detected", "40P01"), True),
        (PgError("stack depth limit exceeded", "54001"), False),
        (PgError("index row size exceeds maximum", "54000"), False),
        (PgError("could not extend file: No space left on device", "53100"), False),
        (PgError("cannot execute INSERT in a read-only transaction", "25006"), False),
        (sqlite_error("database is locked", 5), True),
        (sqlite_error("database table is locked", 6), True),
        (sqlite_error("too many SQL variables", 1), False),
        (sqlite_error("disk I/O error", 10), False),
        (Exception("server closed the connection unexpectedly"), True),
        (Exception("database is locked"), True),
        (Exception("54001 stack depth limit exceeded"), False),
    ],
)
def test_only_errors_that_pass_are_transient(orig: BaseException, transient: bool) -> None:
    assert transient_db_error(op(orig)) is transient
    assert not transient_db_error(IntegrityError("INSERT", {}, Exception("duplicate key")))
    assert not transient_db_error(ValueError("not a database error"))


def test_a_persistent_error_is_tried_a_few_times_then_raised_whatever_the_budget() -> None:
    calls: list[int] = []

    def refused() -> None:
        calls.append(1)
        raise op(PgError("stack depth limit exceeded", "54001"))

    with pytest.raises(OperationalError):
        with_db_retry(refused, budget_s=None, persistent_tries=3, max_wait_s=0.01)
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(OperationalError):
        with_db_retry(refused, budget_s=None)  # by default: once
    assert calls == [1]


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    return service


def test_a_result_the_database_always_refuses_fails_the_job_instead_of_holding_it(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sub = svc.submit(UserRef("ann"), "s.py", b"x = 1\n", "add", ["cpu"], "test").submission_id
    calls: list[int] = []

    def refused(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise op(PgError("stack depth limit exceeded", "54001"))

    monkeypatch.setattr(svc, "record_run", refused)
    settings = WorkerSettings(
        _env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.01, backoff_base_s=0, backoff_max_s=0,
        spool_dir=tmp_path / "spool",
    )  # fmt: skip
    worker = Worker(svc, lambda device: FakeLauncher(lambda req: run_result(mode=req.mode)), settings)
    asyncio.run(asyncio.wait_for(worker.run(once=True), 60))  # hung for good before the fix

    with svc.db.transaction() as s:
        job = s.scalar(select(Job).where(Job.submission_id == sub))
        assert job is not None
        assert job.status == JobStatus.FAILED.value and job.lease_owner is not None
        assert job.error is not None and "not your fault" in job.error and "database refused a write" in job.error
        assert "54001" in job.error and "stack depth" not in job.error  # the code, never the database's text
        assert job.attempts == job.max_attempts
    assert len(calls) == STORE_TRIES * job.max_attempts
    assert [r.status for r in worker.reports][-1] == JobStatus.FAILED.value


def test_a_spooled_result_whose_job_was_deleted_is_dropped_not_kept_forever(
    service: LeaderboardService, tmp_path: Path
) -> None:
    """A fault campaign: a result spooled for a job deleted since (with its leaderboard) was tried again, and kept,
    at every start of the worker."""
    from datetime import UTC, datetime

    from leaderboards.queue import Claim
    from leaderboards.spool import ResultSpool

    spool = ResultSpool(tmp_path / "spool")
    now = datetime.now(UTC)
    claim = Claim(job_id=999, submission_id=999, device="cpu", attempt=1, max_attempts=3, owner="dead:1:x#y",
                  remote_ref=None, claimed_at=now, queued_at=now)  # fmt: skip
    path = spool.put(claim, False, True, run_result())
    settings = WorkerSettings(_env_file=None, lease_s=30, heartbeat_s=5, db_retry_s=2, spool_dir=tmp_path / "spool")
    worker = Worker(service, lambda d: FakeLauncher(), settings, spool=spool)
    asyncio.run(worker._store_spooled())
    assert not path.exists()


@pytest.mark.parametrize("queued_by", ["a person", "a once worker's housekeeping pass"])
def test_a_second_stop_while_the_database_is_down_stops_at_once(
    service: LeaderboardService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, queued_by: str
) -> None:
    """A fault campaign: a stop at once (a second signal) while the database was down waited out the killed run's
    clean-up retries (``db_retry_s`` per call, 60 s by default). The worker's queue now gives up once it is closing;
    the job's lease covers it. (A review: so too for a job a once worker serves after a housekeeping pass.)"""
    import time

    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    passes: list[int] = []

    def housekeeping() -> list[str]:
        passes.append(len(passes))
        if queued_by != "a person" and len(passes) == 2:
            service.submit(UserRef("ann"), "s.py", b"x = 1\n", "add", ["cpu"], "test")
            return ["queued a job"]
        return []

    if queued_by == "a person":
        service.submit(UserRef("ann"), "s.py", b"x = 1\n", "add", ["cpu"], "test")
    started = asyncio.Event()

    async def hang(request: Any, job: Any) -> Any:
        started.set()
        await asyncio.sleep(3600)

    def down(*a: Any, **k: Any) -> Any:
        raise OperationalError("UPDATE jobs", {}, Exception("server closed the connection unexpectedly"))

    launcher = FakeLauncher(name="hang", steps=[hang], progress=(), remote_refs=False)
    settings = WorkerSettings(_env_file=None, lease_s=30, heartbeat_s=5, poll_s=0.05, db_retry_s=20, stop_grace_s=0,
                              spool_dir=tmp_path / "spool")  # fmt: skip
    worker = Worker(service, lambda d: launcher, settings, housekeeping=housekeeping)

    async def main() -> float:
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop, once=queued_by != "a person"))
        await asyncio.wait_for(started.wait(), 30)
        monkeypatch.setattr(worker.queue, "add_note", lambda *a, **k: worker.queue._retry(down, "add_note"))
        monkeypatch.setattr(worker.queue, "release", lambda *a, **k: worker.queue._retry(down, "release"))
        stop.set()
        task.cancel()  # the second signal
        t0 = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - t0

    assert asyncio.run(main()) < 10  # 40 s of retries before


def test_an_unfinished_spool_write_is_swept_once_old_and_a_fresh_one_kept(tmp_path: Path) -> None:
    """A fault campaign: a process killed between writing a result to its temporary name and renaming it left the
    temporary file for good (only finished ``*.json`` files are read)."""
    import os
    import time

    from leaderboards.spool import PARTIAL_AGE_S, ResultSpool

    folder = tmp_path / "spool"
    folder.mkdir()
    old, fresh = folder / ".spool-old", folder / ".spool-fresh"
    old.write_text('{"claim": ')
    fresh.write_text('{"claim": ')
    long_ago = time.time() - PARTIAL_AGE_S - 60
    os.utime(old, (long_ago, long_ago))
    assert ResultSpool(folder).pending() == []
    assert not old.exists() and fresh.exists()
