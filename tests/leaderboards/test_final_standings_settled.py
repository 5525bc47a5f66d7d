"""The final standings are made from the board as it stands once everything made in time has run (a red team's
findings, 2026-11-29): a ranked job still queued at the deadline is waited for, each person holds one place (the
current best entry, never an older one that a system test happened to cover), a board with no entry freezes empty
and quietly, and a user banned or an entry deleted after the freeze leaves the standings when they are read."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from helpers import write_problem
from sqlalchemy import func, select
from test_system_tests import HELD_OUT, Clock, serve

from leaderboards.db import Database
from leaderboards.errors import InvalidChange
from leaderboards.models import AuditLog
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode
from runners.launchers.fake import FakeLauncher, accepted_result

SLOW = b"def custom_kernel(data):\n    return list(data)\n"
FAST = b"def custom_kernel(data):\n    return data\n"
MIDDLE = b"def custom_kernel(data):\n    return [*data]\n"
SPEED = {SLOW: 1000.0, FAST: 500.0, MIDDLE: 1100.0}


@pytest.fixture
def clock() -> Clock:
    return Clock()


def board(database: Database, settings: CoreSettings, root: Path, clock: Clock, *, holdout: bool) -> LeaderboardService:
    service = LeaderboardService(database, settings, clock=clock)
    path = write_problem(root / "problems")
    if holdout:
        task = yaml.safe_load((path / "task.yml").read_text())
        task["holdout"] = HELD_OUT
        (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    service.create_leaderboard(load_problem(path), deadline=clock.now + timedelta(days=1), devices=["cpu"])
    return service


def runner() -> FakeLauncher:
    return FakeLauncher(lambda r: accepted_result(r, SPEED[r.submission.content]))


def submit(service: LeaderboardService, user: str, code: bytes) -> int:
    return service.submit(UserRef(user), "k.py", code, "add", ["cpu"], Mode.RANKED).submission_id


def ended(service: LeaderboardService, launcher: FakeLauncher, tests: int = 0) -> None:
    """The deadline's housekeeping run to the freeze: ``tests`` system tests queued and run first (held-out cases)."""
    if tests:
        assert service.competition_tick() == [f"add: queued {tests} system tests at the deadline"]
        serve(service, launcher)
    assert service.competition_tick() == ["add: froze the final standings on cpu"]


def final_rows(service: LeaderboardService) -> list[tuple[int, bool, str, int]]:
    return [(r.rank, r.tied, r.user_name, r.submission_id) for r in service.standings("add", final=True).rows]


@pytest.mark.parametrize("holdout", [False, True], ids=["no-holdout", "holdout"])
def test_a_ranked_job_made_in_time_and_still_queued_at_the_deadline_is_waited_for(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock, holdout: bool
) -> None:
    service = board(database, settings, tmp_path, clock, holdout=holdout)
    launcher = runner()
    submit(service, "ann", SLOW)
    serve(service, launcher)
    clock.now += timedelta(hours=23, minutes=59)
    bob = submit(service, "bob", FAST)  # one minute before the deadline, behind a busy queue
    clock.now += timedelta(minutes=2)
    assert service.competition_tick() == []  # bob's ranked job has not run: nothing is queued or frozen yet
    waiting = r"1 ranked job of 'add' on cpu made before the deadline \(or admitted late\) has not run yet"
    with pytest.raises(InvalidChange, match=waiting):
        service.freeze_standings("add", "cpu", actor="admin")
    serve(service, launcher)  # bob's job runs after the deadline
    ended(service, launcher, tests=2 if holdout else 0)
    assert [(u, s) for _, _, u, s in final_rows(service)] == [("bob", bob), ("ann", 1)]


def test_each_person_holds_one_final_place_their_current_best(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    """Ann's first entry was system-tested while the board was open; then she beat it. Only her best ranks, and it is
    the one the deadline tests."""
    service = board(database, settings, tmp_path, clock, holdout=True)
    launcher = runner()
    submit(service, "ann", SLOW)
    submit(service, "carl", MIDDLE)
    serve(service, launcher)
    assert len(service.queue_system_tests("add", actor="admin", top=10).entries) == 2
    serve(service, launcher)
    best = submit(service, "ann", FAST)
    serve(service, launcher)
    clock.now += timedelta(days=2)
    ended(service, launcher, tests=2)
    assert [(u, s) for _, _, u, s in final_rows(service)] == [("ann", best), ("carl", 2)]


def test_an_entry_whose_system_test_predates_a_held_out_case_added_since_is_tested_again(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    service = board(database, settings, tmp_path, clock, holdout=True)
    launcher = runner()
    submit(service, "ann", SLOW)
    serve(service, launcher)
    clock.now += timedelta(days=2)
    assert service.competition_tick() == ["add: queued 1 system tests at the deadline"]
    serve(service, launcher)
    from leaderboards.models import SystemTest

    with service.db.transaction() as s:  # as if a hack had added a held-out case after the test ran
        for test in s.scalars(select(SystemTest)):
            test.cases -= 1
            test.passed = test.cases
    ended(service, launcher, tests=1)
    assert [u for _, _, u, _ in final_rows(service)] == ["ann"]


def test_a_held_out_board_with_no_entry_freezes_empty_once_and_quietly(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    service = board(database, settings, tmp_path, clock, holdout=True)
    clock.now += timedelta(days=2)
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    assert service.competition_tick() == []
    assert final_rows(service) == []
    with service.db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(AuditLog).where(AuditLog.action == "system_test")) == 0


def test_a_user_banned_or_an_entry_deleted_after_the_freeze_leaves_the_final_standings(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    service = board(database, settings, tmp_path, clock, holdout=False)
    launcher = runner()
    ann = submit(service, "ann", SLOW)
    submit(service, "bob", FAST)
    carl = submit(service, "carl", MIDDLE)
    serve(service, launcher)
    clock.now += timedelta(days=2)
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    assert [u for _, _, u, _ in final_rows(service)] == ["bob", "ann", "carl"]
    service.ban_user(UserRef("bob"), reason="cheating", actor="admin")
    assert [(u, s) for _, _, u, s in final_rows(service)] == [("ann", ann), ("carl", carl)]
    service.delete_submission(carl, actor="admin")
    assert [(r, u, s) for r, _, u, s in final_rows(service)] == [(1, "ann", ann)]


def test_an_entry_left_out_at_the_freeze_and_back_since_thaws_the_standings_and_returns(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    """A red team: an entry quarantined when the standings froze, then cleared, stayed missing for good while the live
    ranking showed it; so did the entry of a user banned then and unbanned since. Each thaws its device's standings
    (audited), and the deadline's housekeeping freezes them again with it."""
    service = board(database, settings, tmp_path, clock, holdout=False)
    launcher = runner()
    submit(service, "ann", SLOW)
    bob = submit(service, "bob", FAST)
    carl = submit(service, "carl", MIDDLE)
    serve(service, launcher)
    service.moderate(bob, "quarantined", actor="admin", reason="looks odd")
    service.ban_user(UserRef("carl"), reason="spam", actor="admin")
    clock.now += timedelta(days=2)
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    assert [u for _, _, u, _ in final_rows(service)] == ["ann"]
    service.moderate(bob, "cleared", actor="admin", reason="it was fine")
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    assert [(u, s) for _, _, u, s in final_rows(service)] == [("bob", bob), ("ann", 1)]
    service.unban_user(UserRef("carl"), actor="admin")
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    assert [(u, s) for _, _, u, s in final_rows(service)] == [("bob", bob), ("ann", 1), ("carl", carl)]
    with service.db.transaction() as s:
        thaws = s.scalars(select(AuditLog.actor).where(AuditLog.action == "thaw_standings")).all()
    assert thaws == ["admin", "admin"]
    service.moderate(bob, "quarantined", actor="admin", reason="looked again")  # leaves when read, no thaw
    service.moderate(bob, "cleared", actor="admin", reason="fine after all")  # it is in the frozen list: no thaw
    with service.db.transaction() as s:
        assert len(s.scalars(select(AuditLog.actor).where(AuditLog.action == "thaw_standings")).all()) == 2
    assert [u for _, _, u, _ in final_rows(service)] == ["bob", "ann", "carl"]


def test_a_serving_worker_freezes_soon_after_the_last_system_test_not_a_sweep_later(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    """An organizer's walk: the system tests ran at once, the freeze came only at the next sweep (600 s by default)."""
    import asyncio

    from leaderboards.holdout import SystemTestRunner
    from leaderboards.worker import Worker, WorkerSettings

    service = board(database, settings, tmp_path, clock, holdout=True)
    launcher = runner()
    submit(service, "ann", SLOW)
    serve(service, launcher)
    clock.now += timedelta(days=2)
    said: list[str] = []

    def housekeeping() -> list[str]:
        lines = service.competition_tick()
        said.extend(lines)
        return lines

    worker_settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0, sweep_s=600.0)
    tests = SystemTestRunner(service, lambda _d: launcher, 10.0)
    worker = Worker(service, lambda _d: launcher, worker_settings, system_tests=tests, housekeeping=housekeeping)
    worker.housekeep_gap_s = 1.0  # (30 s in service: at most one early pass per gap)

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        for _ in range(1000):
            await asyncio.sleep(0.02)
            if any("froze" in line for line in said):
                break
        stop.set()
        await asyncio.wait_for(task, 30)

    asyncio.run(main())
    assert said == ["add: queued 1 system tests at the deadline", "add: froze the final standings on cpu"]


@pytest.mark.parametrize("how", ["quarantined", "deleted"])
def test_a_frozen_best_entry_taken_out_gives_its_author_their_next_best_not_no_place(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock, how: str
) -> None:
    """A review of the thaw: ann's best entry quarantined (or deleted) after the freeze dropped her from the final
    standings while her older entry still ranked live, and an unrelated unban of a user never banned brought her
    back. Her ranking rows' rebuild thaws the standings; they freeze again with her older entry."""
    service = board(database, settings, tmp_path, clock, holdout=False)
    launcher = runner()
    old = submit(service, "ann", SLOW)
    carl = submit(service, "carl", MIDDLE)
    serve(service, launcher)
    best = submit(service, "ann", FAST)
    serve(service, launcher)
    clock.now += timedelta(days=2)
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    assert [(u, s) for _, _, u, s in final_rows(service)] == [("ann", best), ("carl", carl)]
    if how == "quarantined":
        service.moderate(best, "quarantined", actor="admin", reason="caches outputs")
    else:
        service.delete_submission(best, actor="admin")
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    assert [(u, s) for _, _, u, s in final_rows(service)] == [("ann", old), ("carl", carl)]
    service.unban_user(UserRef("carl"), actor="admin")  # never banned: nothing to undo, nothing thawed
    assert service.competition_tick() == []
    with service.db.transaction() as s:
        assert s.scalars(select(AuditLog.action).where(AuditLog.action.in_(["unban", "thaw_standings"]))).all() == [
            "thaw_standings"]  # fmt: skip
