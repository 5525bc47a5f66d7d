"""Moderation of entries (issue 29): flagged -> quarantined -> hacked | cleared, each change audited with who, when
and why. Quarantined and hacked entries leave the live ranking, the standings (live and final) and the
announcements; the author reads why in their own view; cleared ones come back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import write_problem
from sqlalchemy import select

from leaderboards.db import Database
from leaderboards.errors import InvalidChange
from leaderboards.models import AuditLog, Submission
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

FAST = b"def custom_kernel(data):\n    return data\n"
SLOW = b"def custom_kernel(data):\n    return list(data)\n"
SPEED = {FAST: 500.0, SLOW: 1000.0}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2031, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock) -> LeaderboardService:
    service = LeaderboardService(database, settings, clock=clock)
    service.create_leaderboard(
        load_problem(write_problem(tmp_path / "problems")), deadline=clock.now + timedelta(days=1), devices=["cpu"]
    )
    return service


def respond(request: RunRequest) -> RunResult:
    return accepted_result(request, SPEED.get(request.submission.content, 1500.0))


def serve(service: LeaderboardService) -> None:
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    launcher = FakeLauncher(respond)
    launchers: Callable[[str], FakeLauncher] = lambda _d: launcher  # noqa: E731
    asyncio.run(Worker(service, launchers, settings).run(once=True))


def ranked(service: LeaderboardService) -> dict[str, int]:
    ids = {}
    for user, code in (("cheat", FAST), ("honest", SLOW)):
        ids[user] = service.submit(UserRef(user), "k.py", code, "add", ["cpu"], Mode.RANKED).submission_id
    serve(service)
    return ids


def board(service: LeaderboardService) -> list[str]:
    return [e.user_name for e in service.ranking("add", "cpu").entries]


def test_quarantine_takes_an_entry_out_of_every_ranking_and_clearing_brings_it_back(
    svc: LeaderboardService, clock: Clock
) -> None:
    ids = ranked(svc)
    assert board(svc) == ["cheat", "honest"]
    view = svc.moderate(ids["cheat"], "flagged", actor="discord:1", reason="suspiciously fast")
    assert (view.state, view.by, view.reason) == ("flagged", "discord:1", "suspiciously fast")
    assert board(svc) == ["cheat", "honest"]  # a flagged entry still ranks
    clock.now += timedelta(minutes=1)
    svc.moderate(ids["cheat"], "quarantined", actor="discord:1", reason="caches its output between calls")
    assert board(svc) == ["honest"]
    assert [r.user_name for r in svc.standings("add").rows] == ["honest"]
    mine = svc.user_submissions(UserRef("cheat"))
    assert mine[0].moderation == "quarantined"
    assert "out of every ranking" in (mine[0].moderation_note or "")
    assert "caches its output between calls" in (mine[0].moderation_note or "")
    assert svc.submission_status(ids["cheat"]).moderation == "quarantined"
    clock.now += timedelta(minutes=1)
    svc.moderate(ids["cheat"], "cleared", actor="discord:2", reason="the cache is legal here")
    assert board(svc) == ["cheat", "honest"]
    with svc.db.transaction() as s:
        trail = s.scalars(select(AuditLog).where(AuditLog.action == "moderate").order_by(AuditLog.id)).all()
        assert [(a.actor, a.detail["from"], a.detail["to"]) for a in trail] == [
            ("discord:1", None, "flagged"), ("discord:1", "flagged", "quarantined"),
            ("discord:2", "quarantined", "cleared")]  # fmt: skip
        assert trail[1].detail["reason"] == "caches its output between calls"
        assert trail[0].target == f"submission:{ids['cheat']}"


def test_a_hacked_entry_is_left_out_of_frozen_final_standings_and_the_next_moves_up(
    svc: LeaderboardService, clock: Clock
) -> None:
    ids = ranked(svc)
    clock.now += timedelta(days=2)
    final = svc.freeze_standings("add", "cpu", actor="admin")
    assert [r.user_name for r in final.rows][:1] == ["cheat"]
    svc.moderate(ids["cheat"], "quarantined", actor="admin", reason="reads the expected output")
    svc.moderate(ids["cheat"], "hacked", actor="admin", reason="reads the expected output")
    rows = svc.standings("add", final=True).rows
    assert [(r.rank, r.user_name) for r in rows] == [(1, "honest")]


def test_announcements_wait_while_an_entry_is_quarantined(svc: LeaderboardService) -> None:
    ids = ranked(svc)
    svc.moderate(ids["cheat"], "quarantined", actor="admin", reason="looking")
    announced = svc.claim_announcements("bot")
    assert ids["cheat"] not in [c.submission_id for c in announced]
    assert ids["honest"] in [c.submission_id for c in announced]


def test_a_run_landing_after_quarantine_does_not_rank(svc: LeaderboardService) -> None:
    sid = svc.submit(UserRef("cheat"), "k.py", FAST, "add", ["cpu"], Mode.RANKED).submission_id
    svc.moderate(sid, "quarantined", actor="admin", reason="screened as suspicious")
    serve(svc)
    assert board(svc) == []


def test_transitions_that_skip_the_states_are_refused_with_the_allowed_ones(svc: LeaderboardService) -> None:
    ids = ranked(svc)
    with pytest.raises(InvalidChange, match="can become flagged or quarantined, not hacked"):
        svc.moderate(ids["cheat"], "hacked", actor="admin", reason="x")
    with pytest.raises(InvalidChange, match="Say why"):
        svc.moderate(ids["cheat"], "flagged", actor="admin", reason="  ")
    with pytest.raises(InvalidChange, match="choose one of: flagged, quarantined, hacked, cleared"):
        svc.moderate(ids["cheat"], "banned", actor="admin", reason="x")
    svc.moderate(ids["cheat"], "flagged", actor="admin", reason="x")
    with pytest.raises(InvalidChange, match="is flagged"):
        svc.moderate(ids["cheat"], "flagged", actor="admin", reason="again")


def test_the_moderation_list_filters_by_state_and_leaderboard(svc: LeaderboardService) -> None:
    ids = ranked(svc)
    svc.moderate(ids["cheat"], "quarantined", actor="admin", reason="looking")
    svc.moderate(ids["honest"], "flagged", actor="admin", reason="check")
    assert [v.submission_id for v in svc.moderated(state="quarantined")] == [ids["cheat"]]
    assert {v.user_name for v in svc.moderated(leaderboard="add")} == {"cheat", "honest"}


def test_a_flag_from_the_pooling_becomes_a_moderation_flag(svc: LeaderboardService, database: Database) -> None:
    """A ranked job whose secret run is clearly slower (``leaderboards.pooling``) is flagged for a moderator."""

    def slower_on_secret(request: RunRequest) -> RunResult:
        return accepted_result(request, 3000.0 if request.seed is not None and request.mode is Mode.RANKED else 500.0)

    sid = svc.submit(UserRef("cheat"), "k.py", FAST, "add", ["cpu"], Mode.RANKED).submission_id
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    launcher = FakeLauncher(slower_on_secret)
    asyncio.run(Worker(svc, lambda _d: launcher, settings).run(once=True))
    with database.transaction() as s:
        sub = s.get(Submission, sid)
        assert sub is not None and sub.moderation == "flagged" and sub.moderated_by == "pooling"
    assert board(svc) == ["cheat"]  # flagged still ranks


def test_the_audit_log_filters_pages_and_withholds_secrets(svc: LeaderboardService, clock: Clock) -> None:
    ids = ranked(svc)
    with svc.db.transaction() as s:  # a detail that holds secrets under their names, as a careless writer might
        svc._audit(s, "admin", "oops", "add", secret_seed=123456789, nested={"token": "kc_abc", "holdout": [{"n": 7}]})
    clock.now += timedelta(hours=1)
    svc.moderate(ids["cheat"], "flagged", actor="discord:9", reason="odd")
    oops = svc.audit_log(action="oops").entries[0]
    assert oops.detail == {"secret_seed": "[withheld]", "nested": {"token": "[withheld]", "holdout": "[withheld]"}}
    assert "123456789" not in oops.text and "kc_abc" not in oops.text
    about = svc.audit_log(leaderboard="add")
    assert {"create_leaderboard", "oops", "moderate"} <= {e.action for e in about.entries}
    assert [e.action for e in svc.audit_log(actor="discord:9").entries] == ["moderate"]
    assert [e.action for e in svc.audit_log(since=clock.now).entries] == ["moderate"]
    first = svc.audit_log(limit=1)
    assert len(first.entries) == 1 and first.next_before == first.entries[0].entry_id
    rest = svc.audit_log(before=first.next_before, limit=200)
    assert first.entries[0].entry_id not in [e.entry_id for e in rest.entries] and rest.next_before is None
    with pytest.raises(InvalidChange, match="limit must be from 1 to 200"):
        svc.audit_log(limit=500)
