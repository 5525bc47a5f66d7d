"""The work a worker runs besides jobs (system tests, re-timing rounds, input hacks, rejudges) stores its result the
way a job's is stored (``leaderboards.queue.store_retried``): one dropped connection costs a retry, not the finished
run (which would wait out its lease, run again, and fail after three such blips). On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import test_rejudge as rj
import test_system_tests as st
import yaml
from helpers import write_problem
from sqlalchemy.exc import OperationalError

from leaderboards.db import Database
from leaderboards.problems import load_problem
from leaderboards.rejudge import RejudgeRunner
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.fake import FakeLauncher

SETTINGS = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)


def blip_once(service: LeaderboardService, monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """``service.<name>`` fails once as a dropped connection does, after its work was done and before it stored."""
    real = getattr(service, name)
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("UPDATE", {}, Exception("server closed the connection unexpectedly"))
        return real(*args, **kwargs)

    monkeypatch.setattr(service, name, flaky)
    return calls


def test_a_dropped_connection_does_not_lose_a_finished_system_test(
    database: Database, settings: CoreSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = st.Clock()
    svc = LeaderboardService(database, settings, clock=clock)
    path = write_problem(tmp_path / "problems")
    task = yaml.safe_load((path / "task.yml").read_text())
    task["holdout"] = st.HELD_OUT
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    svc.create_leaderboard(load_problem(path), deadline=clock.now + timedelta(days=1), devices=["cpu"])
    launcher = FakeLauncher(st.respond)
    st.submit_all(svc)
    st.serve(svc, launcher)
    svc.queue_system_tests("add", actor="admin", top=1)
    launched = len(launcher.requests)
    calls = blip_once(svc, monkeypatch, "record_system_test")

    st.serve(svc, launcher)

    (coverage,) = svc.system_test_coverage("add")
    assert coverage.status == "done" and len(calls) == 2
    assert len(launcher.requests) == launched + 1  # run once, stored on the second try


def test_a_dropped_connection_does_not_lose_a_finished_rejudge(
    database: Database, settings: CoreSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = rj.Clock()
    svc = LeaderboardService(database, settings.model_copy(update={"retime_top": 2}), clock=clock)
    problem = load_problem(write_problem(tmp_path / "problems"))
    svc.create_leaderboard(problem, deadline=clock.now + timedelta(days=1), devices=["cpu"])
    runner = rj.FakeRunner()
    rj.submit(svc, "alice", rj.FAST)
    rj.serve(svc, runner)
    svc.queue_rejudges("add", actor="admin", top=1)
    runner.seen = []
    calls = blip_once(svc, monkeypatch, "record_rejudge")

    launcher = FakeLauncher(runner)
    rejudges = RejudgeRunner(svc, lambda _d: launcher, 10.0)
    asyncio.run(Worker(svc, lambda _d: launcher, SETTINGS, rejudges=rejudges).run(once=True))

    (done,) = svc.rejudges("add")
    assert done.status == "done" and len(calls) == 2
    assert runner.seen == [rj.FAST, rj.FAST]  # its public and secret runs, once
