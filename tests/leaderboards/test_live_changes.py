"""Changes to a live leaderboard (issue 37), on SQLite and PostgreSQL: renaming it, or moving its deadline into the
past, while it has queued or running jobs or ranked entries says what it affects and applies only when forced;
every such change is audited with who, when, what, and the old and new values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select, update

from leaderboards.errors import LiveChangeNeedsForce
from leaderboards.models import AuditLog, Job, JobStatus
from leaderboards.results import SetEntry, SyncAction, UserRef
from leaderboards.service import LeaderboardService
from runners.contract import Mode

CODE = b"def custom_kernel(data):\n    return data\n"


@pytest.fixture
def problem_dir(tmp_path: Path) -> Path:
    return tmp_path / "problems"


@pytest.fixture
def board(service: LeaderboardService, problem_dir: Path) -> str:
    service.create_leaderboard(make_problem(problem_dir), deadline=future(), devices=["cpu"])
    return "add"


def ranked_entry(service: LeaderboardService, user: str, score: float = 100.0) -> None:
    receipt = service.submit(UserRef(user), "k.py", CODE + f"# {user}\n".encode(), "add", ["cpu"], Mode.RANKED)
    job = receipt.jobs[0].job_id
    service.record_run(job, run_result([score], mode=Mode.RANKED))
    service.record_run(job, run_result([score], mode=Mode.RANKED), secret=True)
    with service.db.transaction() as s:  # what the worker does after recording: the job is done
        s.execute(update(Job).where(Job.id == job).values(status=JobStatus.SUCCEEDED.value))


def queued(service: LeaderboardService, user: str) -> None:
    service.submit(UserRef(user), "k.py", CODE + f"# queued {user}\n".encode(), "add", ["cpu"], Mode.RANKED)


def audits(service: LeaderboardService) -> list[AuditLog]:
    with service.db.transaction() as s:
        rows = list(s.scalars(select(AuditLog).where(AuditLog.action == "update_leaderboard").order_by(AuditLog.id)))
        s.expunge_all()
        return rows


def test_renaming_a_live_board_says_what_it_affects_and_needs_force(service: LeaderboardService, board: str) -> None:
    ranked_entry(service, "ann")
    ranked_entry(service, "bob")
    queued(service, "cy")
    with pytest.raises(LiveChangeNeedsForce) as refused:
        service.update_leaderboard(board, new_name="add-2026", actor="discord:1")
    message = refused.value.message
    assert "renaming it to 'add-2026'" in message and "force" in message
    assert "1 queued or running job and 2 ranked entries (of ann, bob, cy)" in message
    impact = refused.value.impact
    assert (impact.live_jobs, impact.ranked_entries, impact.users) == (1, 2, ("ann", "bob", "cy"))
    assert service.leaderboard(board).name == "add" and audits(service) == []  # nothing applied, nothing audited

    t0 = datetime.now(UTC)
    result = service.update_leaderboard(board, new_name="add-2026", force=True, actor="discord:1")
    assert result.changed == ("name",) and result.leaderboard.name == "add-2026"
    assert [e.user_name for e in service.ranking("add-2026", "cpu").entries] == ["ann", "bob"]  # entries kept
    (entry,) = audits(service)
    assert entry.actor == "discord:1" and entry.target == "add" and entry.created_at >= t0 - timedelta(seconds=5)
    assert entry.detail["old"] == {"name": "add"} and entry.detail["new"] == {"name": "add-2026"}
    assert entry.detail["forced_while_live"] is True
    assert entry.detail["live"] == {"live_jobs": 1, "ranked_entries": 2}


def test_moving_the_deadline_into_the_past_while_live_needs_force(service: LeaderboardService, board: str) -> None:
    ranked_entry(service, "ann")
    old = service.leaderboard(board).deadline
    past = datetime.now(UTC) - timedelta(hours=1)
    with pytest.raises(LiveChangeNeedsForce) as refused:
        service.update_leaderboard(board, deadline=past, actor="local:root")
    assert "moving its deadline into the past" in refused.value.message
    assert "0 queued or running jobs and 1 ranked entry (of ann)" in refused.value.message
    assert service.leaderboard(board).deadline == old and service.leaderboard(board).is_open

    later = old + timedelta(days=3)  # a deadline moved later (or earlier, but still ahead) needs nothing
    assert service.update_leaderboard(board, deadline=later, actor="local:root").changed == ("deadline",)
    service.update_leaderboard(board, deadline=past, force=True, actor="local:root")
    assert not service.leaderboard(board).is_open
    moved, closed = audits(service)
    assert moved.detail["old"]["deadline"] == old.isoformat() and moved.detail["new"]["deadline"] == later.isoformat()
    assert moved.detail["forced_while_live"] is False
    assert closed.detail["new"]["deadline"] == past.isoformat() and closed.detail["forced_while_live"] is True


def test_a_board_nobody_is_in_changes_without_force(service: LeaderboardService, board: str) -> None:
    ranked_entry(service, "mallory")
    service.ban_user(UserRef("mallory"), reason="cheating", actor="a")  # a banned user's entry is not shown: not live
    service.update_leaderboard(board, new_name="Add", actor="a")  # a case-only rename of itself is its own name
    service.update_leaderboard("Add", deadline=datetime.now(UTC) - timedelta(minutes=1), actor="a")
    assert service.leaderboard("Add").name == "Add" and not service.leaderboard("Add").is_open
    renamed, closed = audits(service)
    assert renamed.detail["old"] == {"name": "add"} and renamed.detail["forced_while_live"] is False
    assert closed.detail["forced_while_live"] is False


def test_a_sync_that_moves_a_live_boards_deadline_into_the_past_needs_force(
    service: LeaderboardService, board: str, problem_dir: Path
) -> None:
    ranked_entry(service, "ann")
    past = datetime.now(UTC) - timedelta(days=1)
    entry = SetEntry(name="add", problem=make_problem(problem_dir), deadline=past, devices=("cpu",))
    items, applied = service.apply_problem_set("set", [entry], actor="local:root")
    assert not applied and items[0].action is SyncAction.NEEDS_FORCE
    assert any("deadline into the past" in r and "1 ranked entry (of ann)" in r for r in items[0].reasons)
    assert service.leaderboard(board).is_open
    items, applied = service.apply_problem_set("set", [entry], force=True, actor="local:root")
    assert applied and not service.leaderboard(board).is_open
    last = audits(service)[-1]
    assert last.actor == "local:root" and last.detail["forced_while_live"] is True
    assert last.detail["new"]["deadline"] == past.isoformat()
