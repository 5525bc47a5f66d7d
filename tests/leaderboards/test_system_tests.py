"""System tests and final standings through the service and a worker (issue 29): the top entries run on the held-out
cases below everyone's submissions, only counts are kept, and the final standings rank those that passed. A kernel
right on the ranked shapes and wrong on one held-out shape is #1 live and absent from the final standings; the honest
#2 becomes #1."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from helpers import write_problem
from sqlalchemy import select

from leaderboards.db import Database
from leaderboards.errors import InvalidChange, NotFound
from leaderboards.holdout import SystemTestRunner
from leaderboards.models import AuditLog, FinalStanding, Job, SystemTest
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult, TestResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result

HELD_OUT = [{"size": 5, "seed": 50}, {"size": 9, "seed": 51}, {"size": 13, "seed": 52}]
CHEAT = b"def custom_kernel(data):\n    return data  # right on the ranked shapes only\n"
HONEST = b"def custom_kernel(data):\n    return list(data)\n"
THIRD = b"def custom_kernel(data):\n    return [*data]\n"
SPEED = {CHEAT: 500.0, HONEST: 1000.0, THIRD: 2000.0}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2031, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def respond(request: RunRequest) -> RunResult:
    """The runner: each file at its speed; the cheat fails the held-out case of size 9 (a system test's only)."""
    result = accepted_result(request, SPEED.get(request.submission.content, 1500.0))
    if request.submission.content == CHEAT and any(c["size"] == 9 for c in request.tests):
        tests = [
            TestResult(
                index=i,
                case=c,
                verdict=Verdict.WRONG_ANSWER if c["size"] == 9 else Verdict.ACCEPTED,
                message=f"mismatch at size {c['size']}",
            )
            for i, c in enumerate(request.tests)
        ]
        return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, tests=tests, message="wrong at size 9")
    return result


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock) -> LeaderboardService:
    service = LeaderboardService(database, settings, clock=clock)
    path = write_problem(tmp_path / "problems")
    task = yaml.safe_load((path / "task.yml").read_text())
    task["holdout"] = HELD_OUT
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    service.create_leaderboard(load_problem(path), deadline=clock.now + timedelta(days=1), devices=["cpu"])
    return service


def serve(service: LeaderboardService, launcher: FakeLauncher, settings: WorkerSettings | None = None) -> None:
    settings = settings or WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    launchers: Callable[[str], FakeLauncher] = lambda _d: launcher  # noqa: E731
    runner = SystemTestRunner(service, launchers, 10.0)
    asyncio.run(Worker(service, launchers, settings, system_tests=runner).run(once=True))


def submit_all(service: LeaderboardService) -> dict[str, int]:
    ids = {}
    for user, code in (("cheat", CHEAT), ("honest", HONEST), ("third", THIRD)):
        ids[user] = service.submit(UserRef(user), "k.py", code, "add", ["cpu"], Mode.RANKED).submission_id
    return ids


def test_the_cheat_is_first_live_and_absent_from_the_final_standings(svc: LeaderboardService, clock: Clock) -> None:
    launcher = FakeLauncher(respond)
    ids = submit_all(svc)
    serve(svc, launcher)
    live = svc.standings("add")
    assert [(r.rank, r.user_name, r.coverage) for r in live.rows] == [
        (1, "cheat", None), (2, "honest", None), (3, "third", None)]  # fmt: skip
    for request in launcher.requests:  # no competitor's run was sent a held-out case
        assert request.tests != HELD_OUT and all(c not in request.tests for c in HELD_OUT)

    clock.now += timedelta(days=2)  # past the deadline: the workers' housekeeping ends the competition
    assert svc.competition_tick() == ["add: queued 3 system tests at the deadline"]
    with pytest.raises(InvalidChange, match="have not run yet"):
        svc.freeze_standings("add", "cpu", actor="admin")
    assert svc.competition_tick() == []  # queued once; nothing to freeze yet
    assert [c.status for c in svc.system_test_coverage("add")] == ["queued"] * 3
    serve(svc, launcher)
    system = [r for r in launcher.requests if r.tests == HELD_OUT]
    assert sorted(r.submission.content for r in system) == sorted([CHEAT, HONEST, THIRD])
    assert all(r.mode is Mode.TEST and not r.benchmarks for r in system)

    coverage = {c.user_name: c.text for c in svc.system_test_coverage("add")}
    assert coverage == {"cheat": "2 of 3 held-out cases", "honest": "3 of 3 held-out cases",
                        "third": "3 of 3 held-out cases"}  # fmt: skip
    live = svc.standings("add")  # live standings show the coverage once system tests have run
    assert (live.rows[0].user_name, live.rows[0].coverage) == ("cheat", "2 of 3 held-out cases")

    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    final = svc.standings("add", final=True)
    assert [(r.rank, r.tied, r.user_name, r.coverage) for r in final.rows] == [
        (1, False, "honest", "3 of 3 held-out cases"), (2, False, "third", "3 of 3 held-out cases")]  # fmt: skip
    assert [(e.user_name, e.submission_id, e.coverage) for e in final.excluded] == [
        ("cheat", ids["cheat"], "2 of 3 held-out cases")]  # fmt: skip
    low, high = final.rows[0].low_ns, final.rows[0].high_ns
    assert low is not None and high is not None and low < 1000.0 < high
    assert svc.competition_tick() == []  # frozen once
    with pytest.raises(InvalidChange, match="frozen already"):
        svc.freeze_standings("add", "cpu", actor="admin")


def test_nothing_of_a_held_out_case_is_stored(svc: LeaderboardService, clock: Clock, database: Database) -> None:
    launcher = FakeLauncher(respond)
    submit_all(svc)
    serve(svc, launcher)
    svc.queue_system_tests("add", actor="admin", top=2)
    serve(svc, launcher)
    clock.now += timedelta(days=2)
    svc.competition_tick()
    serve(svc, launcher)
    svc.competition_tick()
    with database.transaction() as s:
        rows = [*s.scalars(select(SystemTest)), *s.scalars(select(FinalStanding)), *s.scalars(select(AuditLog))]
        stored = repr([vars(r) for r in rows])
        assert rows and "mismatch at size" not in stored and "'size': 9" not in stored and "'seed': 51" not in stored
        from leaderboards.models import Run

        assert all(r.mode == Mode.RANKED.value for r in s.scalars(select(Run)))  # a system test stores no run


def test_admin_system_tests_take_the_top_k_and_wait_below_submissions(svc: LeaderboardService) -> None:
    launcher = FakeLauncher(respond)
    submit_all(svc)
    serve(svc, launcher)
    queued = svc.queue_system_tests("add", actor="admin", top=2)
    assert (queued.cases, [e.user_name for e in queued.entries]) == (3, ["cheat", "honest"])
    assert all(e.text == "system test queued" for e in queued.entries)
    svc.submit(UserRef("late"), "k.py", HONEST + b"# late\n", "add", ["cpu"], Mode.TEST)  # queued after them
    order: list[str] = []
    launcher.respond = lambda r: (order.append("system" if r.tests == HELD_OUT else "job"), respond(r))[1]
    serve(svc, launcher)
    assert order == ["job", "system", "system"]  # a person's submission first
    with svc.db.transaction() as s:
        assert all(j.status == "succeeded" for j in s.scalars(select(Job)))


def test_a_system_test_the_runner_fails_is_retried_then_marked_not_the_entrys(
    svc: LeaderboardService, clock: Clock
) -> None:
    launcher = FakeLauncher(respond)
    submit_all(svc)
    serve(svc, launcher)
    svc.queue_system_tests("add", actor="admin", top=1)
    launcher.respond = lambda r: (
        RunResult.infrastructure_error(r.mode, "the GPU fell off") if r.tests == HELD_OUT else respond(r)
    )
    serve(svc, launcher)
    (coverage,) = svc.system_test_coverage("add")
    assert (coverage.status, coverage.passed) == ("failed", None)
    assert sum(r.tests == HELD_OUT for r in launcher.requests) == 3  # three attempts
    clock.now += timedelta(days=2)
    with pytest.raises(InvalidChange, match="could not run"):  # the entry waits for a run rather than fall out
        svc.freeze_standings("add", "cpu", actor="admin")
    svc.queue_system_tests("add", actor="admin", top=1)
    launcher.respond = respond
    serve(svc, launcher)
    assert [(r.user_name, r.coverage) for r in svc.freeze_standings("add", "cpu", actor="admin").rows] == []
    assert [e.coverage for e in svc.standings("add", final=True).excluded] == ["2 of 3 held-out cases"]


def test_a_problem_without_held_out_cases_has_no_system_test_and_final_standings_rank_all(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    service = LeaderboardService(database, settings, clock=clock)
    service.create_leaderboard(load_problem(write_problem(tmp_path)), deadline=clock.now + timedelta(hours=1),
                               devices=["cpu"])  # fmt: skip
    with pytest.raises(InvalidChange, match="no held-out cases"):
        service.queue_system_tests("add", actor="admin")
    with pytest.raises(NotFound, match="no final standings"):
        service.standings("add", final=True)
    submit_all(service)
    serve(service, FakeLauncher(respond))
    with pytest.raises(InvalidChange, match="after its deadline"):
        service.freeze_standings("add", "cpu", actor="admin")
    clock.now += timedelta(hours=2)
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    final = service.standings("add", final=True)
    assert [(r.rank, r.user_name, r.coverage) for r in final.rows] == [
        (1, "cheat", None), (2, "honest", None), (3, "third", None)]  # fmt: skip


def test_the_deadline_tests_as_many_entries_as_the_problem_says(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    service = LeaderboardService(database, settings, clock=clock)
    path = write_problem(tmp_path / "problems")
    task = yaml.safe_load((path / "task.yml").read_text())
    task.update(holdout=HELD_OUT, system_test_top=1)
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    service.create_leaderboard(load_problem(path), deadline=clock.now + timedelta(hours=1), devices=["cpu"])
    submit_all(service)
    launcher = FakeLauncher(respond)
    serve(service, launcher)
    clock.now += timedelta(hours=2)
    assert service.competition_tick() == ["add: queued 1 system tests at the deadline"]
    serve(service, launcher)
    service.competition_tick()
    final = service.standings("add", final=True)  # the only finalist failed: nobody stands
    assert (final.rows, [e.user_name for e in final.excluded]) == ((), ["cheat"])
