"""What a hidden board or a moderated entry must not leak through the service: a hidden board's rank changes are
never announced (not even later, when it is made public), a quarantine that lands while a run is being recorded
still keeps the entry out of the ranking, and the after-the-deadline list leaves quarantined entries out."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session
from test_late_and_invites import ANN, BOB, FAST, SLOW, board, late_entry, speed
from test_system_tests import Clock, serve

from leaderboards import ranking
from leaderboards.db import Database
from leaderboards.models import BestScore, Leaderboard, RankChange, Run
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode
from runners.launchers.fake import FakeLauncher


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(database: Database, settings: CoreSettings, clock: Clock) -> LeaderboardService:
    return LeaderboardService(database, settings, clock=clock)


def test_a_hidden_boards_rank_changes_are_never_announced(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    board(svc, tmp_path, clock, visible=False)
    svc.join(BOB, svc.create_invite("add", actor="admin").code)
    svc.submit(BOB, "k.py", FAST, "add", ["cpu"], Mode.RANKED)
    serve(svc, FakeLauncher(speed))
    assert [e.user_name for e in svc.ranking("add", viewer=BOB).entries] == ["bob"]  # it ranked
    assert svc.claim_announcements("bot") == ()
    with svc.db.transaction() as s:  # handled, not waiting: made public later, the board does not post its past
        assert s.scalars(select(RankChange.announced_at)).all() == [clock.now]
        s.execute(update(Leaderboard).values(visible=True))
    assert svc.claim_announcements("bot") == ()
    svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.RANKED)  # once public, its changes are announced
    serve(svc, FakeLauncher(speed))
    assert [c.user_name for c in svc.claim_announcements("bot")] == ["ann"]


def test_a_quarantine_landing_while_the_run_is_recorded_keeps_the_entry_out(
    database: Database, svc: LeaderboardService, clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if database.engine.dialect.name == "sqlite":
        pytest.skip("SQLite has one writer: a moderator's commit cannot land inside the recording transaction")
    board(svc, tmp_path, clock)
    sub = svc.submit(BOB, "k.py", FAST, "add", ["cpu"], Mode.RANKED).submission_id
    real = ranking.practice_only
    landed: list[int] = []

    def quarantine_in_between(s: Session, submission_id: int) -> bool:
        """record_run's first read of the entry, once both runs are stored: a moderator commits a quarantine now,
        from a session of their own, before the recording transaction takes the leaderboard's lock."""
        runs = s.scalar(select(func.count(Run.id)).where(Run.submission_id == submission_id))
        if runs == 2 and not landed:
            view = svc.moderate(sub, "quarantined", actor="admin", reason="reads the expected output")
            landed.append(view.submission_id)
        return real(s, submission_id)

    monkeypatch.setattr(ranking, "practice_only", quarantine_in_between)
    serve(svc, FakeLauncher(speed))
    assert landed == [sub]
    assert svc.ranking("add").entries == ()
    with svc.db.transaction() as s:
        assert s.scalars(select(BestScore)).all() == []
        assert s.scalars(select(RankChange)).all() == []


def test_the_after_the_deadline_list_leaves_quarantined_entries_out(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    late = late_entry(svc, clock, tmp_path)
    practice = svc.submit(ANN, "k.py", SLOW, "add", ["cpu"], Mode.TEST).submission_id
    serve(svc, FakeLauncher(speed))
    svc.moderate(late, "quarantined", actor="admin", reason="reads the expected output")
    page = svc.late_submissions("add")
    assert ([e.submission_id for e in page.entries], page.total) == ([practice], 1)
    svc.moderate(late, "hacked", actor="admin", reason="confirmed")
    assert [e.submission_id for e in svc.late_submissions("add").entries] == [practice]
