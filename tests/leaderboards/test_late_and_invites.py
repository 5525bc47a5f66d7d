"""After the deadline and private boards, through the service (issue 29): a submission after the deadline runs as
unranked practice (its own list, its own limit, in no ranking or standings) until an admin admits it, which thaws
frozen final standings so they freeze again with it; invite codes let users into a hidden leaderboard, are stored
hashed, and refuse unknown, expired, used-up and withdrawn codes, and guessing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from helpers import write_problem
from sqlalchemy import select
from test_system_tests import HELD_OUT, Clock, serve

from leaderboards.db import Database
from leaderboards.errors import InvalidChange, LeaderboardClosed, LeaderboardNotFound, NotFound, RateLimited
from leaderboards.invites import MAX_CODE_CHARS, InviteError
from leaderboards.late import PRACTICE
from leaderboards.models import AuditLog, FinalStanding, Invite, SystemTest
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode, RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

FAST = b"def custom_kernel(data):\n    return data  # fast\n"
SLOW = b"def custom_kernel(data):\n    return list(data)\n"
ANN, BOB, CAROL = UserRef("ann"), UserRef("bob"), UserRef("carol")


def speed(request: RunRequest) -> RunResult:
    return accepted_result(request, 500.0 if request.submission.content == FAST else 1000.0)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def board(service: LeaderboardService, root: Path, clock: Clock, *, holdout: bool = False, visible: bool = True) -> str:
    path = write_problem(root / "problems")
    if holdout:
        task = yaml.safe_load((path / "task.yml").read_text())
        task["holdout"] = HELD_OUT
        (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    service.create_leaderboard(
        load_problem(path), deadline=clock.now + timedelta(days=1), devices=["cpu"], visible=visible
    )
    return "add"


@pytest.fixture
def svc(database: Database, settings: CoreSettings, clock: Clock) -> LeaderboardService:
    return LeaderboardService(database, settings, clock=clock)


def late_entry(svc: LeaderboardService, clock: Clock, tmp_path: Path) -> int:
    """Ann ranked in time; past the deadline Bob sends a faster file as ranked; both served. Bob's submission id."""
    board(svc, tmp_path, clock)
    svc.submit(ANN, "k.py", SLOW, "add", ["cpu"], Mode.RANKED)
    clock.now += timedelta(days=2)
    late = svc.submit(BOB, "k.py", FAST, "add", ["cpu"], Mode.RANKED).submission_id
    serve(svc, FakeLauncher(speed))
    return late


def test_after_the_deadline_a_submission_runs_as_practice_and_ranks_nowhere(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    late = late_entry(svc, clock, tmp_path)
    status = svc.submission_status(late)
    assert status.jobs[0].ranked_score_ns == pytest.approx(500.0) and status.jobs[0].rank is None
    assert [e.user_name for e in svc.ranking("add").entries] == ["ann"]
    assert [r.user_name for r in svc.standings("add").rows] == ["ann"]
    svc.rebuild_rankings("add")  # computed from the runs alone, it is still out
    assert [e.user_name for e in svc.ranking("add").entries] == ["ann"]
    assert [s.late for s in svc.user_submissions(BOB)] == [PRACTICE]  # the author's own view says so
    page = svc.late_submissions("add")
    assert page.total == 1
    assert [(e.submission_id, e.user_name, e.note) for e in page.entries] == [(late, "bob", PRACTICE)]
    assert page.entries[0].jobs[0].ranked_score_ns == pytest.approx(500.0)
    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    assert [r.user_name for r in svc.standings("add", final=True).rows] == ["ann"]


def test_practice_has_its_own_hourly_limit_and_none_closes_the_board(
    svc: LeaderboardService, settings: CoreSettings, clock: Clock, tmp_path: Path
) -> None:
    board(svc, tmp_path, clock)
    clock.now += timedelta(days=2)
    settings.late_submissions_per_hour = 2
    for mode in (Mode.TEST, Mode.BENCHMARK):
        svc.submit(ANN, "k.py", SLOW, "add", ["cpu"], mode)
    with pytest.raises(RateLimited, match="2 practice submissions per hour"):
        svc.submit(ANN, "k.py", SLOW, "add", ["cpu"], Mode.RANKED)
    svc.submit(BOB, "k.py", SLOW, "add", ["cpu"], Mode.TEST)  # per user
    clock.now += timedelta(hours=1, seconds=1)
    svc.submit(ANN, "k.py", SLOW, "add", ["cpu"], Mode.RANKED)
    settings.late_submissions_per_hour = 0
    with pytest.raises(LeaderboardClosed, match="no longer accepts submissions"):
        svc.submit(CAROL, "k.py", SLOW, "add", ["cpu"], Mode.TEST)


def test_a_batch_after_the_deadline_counts_each_candidate_against_practice(
    svc: LeaderboardService, settings: CoreSettings, clock: Clock, tmp_path: Path
) -> None:
    """Red team, 2026-11-28: a batch checked only that the hour was not yet full, so 9 of 10 used let 64 in."""
    board(svc, tmp_path, clock)
    clock.now += timedelta(days=2)
    settings.late_submissions_per_hour = 3
    svc.submit(ANN, "k.py", SLOW, "add", ["cpu"], Mode.TEST)
    files = [(f"k{i}.py", SLOW + f"# {i}\n".encode()) for i in range(3)]
    with pytest.raises(RateLimited, match="3 practice submissions per hour"):
        svc.submit_batch(ANN, files, "add", "cpu", Mode.BENCHMARK)  # 1 used + 3 > 3
    with pytest.raises(RateLimited, match="fewer than the 4 sent at once"):
        svc.submit_batch(BOB, [*files, ("k9.py", SLOW + b"# 9\n")], "add", "cpu", Mode.BENCHMARK)
    batch = svc.submit_batch(BOB, files, "add", "cpu", Mode.BENCHMARK)  # 0 used + 3: within the limit
    assert [i.status for i in batch.items] == ["queued"] * 3
    with pytest.raises(RateLimited):
        svc.submit(BOB, "k.py", SLOW, "add", ["cpu"], Mode.TEST)


def test_an_admin_admits_one_late_entry_and_it_ranks_with_a_note(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    late = late_entry(svc, clock, tmp_path)
    on_time = svc.user_submissions(ANN)[0].submission_id
    practice = svc.submit(CAROL, "k.py", SLOW, "add", ["cpu"], Mode.TEST).submission_id
    serve(svc, FakeLauncher(speed))
    with pytest.raises(InvalidChange, match="Say why"):
        svc.admit_late(late, actor="admin", reason="  ")
    with pytest.raises(InvalidChange, match="before 'add''s deadline"):
        svc.admit_late(on_time, actor="admin", reason="outage")
    with pytest.raises(InvalidChange, match="only a ranked one can be admitted"):
        svc.admit_late(practice, actor="admin", reason="outage")

    entry = svc.admit_late(late, actor="admin", reason="the queue was down at the deadline")
    note = "late, admitted by admin because the queue was down at the deadline"
    assert entry.note == note
    assert [e.user_name for e in svc.ranking("add").entries] == ["bob", "ann"]
    assert [(r.user_name, r.note) for r in svc.standings("add").rows] == [("bob", note), ("ann", None)]
    assert [s.late for s in svc.user_submissions(BOB)] == [note]
    with pytest.raises(InvalidChange, match="admitted already, by admin"):
        svc.admit_late(late, actor="admin", reason="again")
    with svc.db.transaction() as s:
        audit = s.scalars(select(AuditLog).where(AuditLog.action == "admit_late")).one()
        assert (audit.actor, audit.detail["submission_id"], audit.detail["reason"]) == (
            "admin", late, "the queue was down at the deadline")  # fmt: skip


def test_admitting_after_the_freeze_thaws_the_standings_and_tests_the_entry_first(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    board(svc, tmp_path, clock, holdout=True)
    launcher = FakeLauncher(speed)  # every file right on every case; FAST twice as fast
    svc.submit(ANN, "k.py", SLOW, "add", ["cpu"], Mode.RANKED)
    serve(svc, launcher)
    clock.now += timedelta(days=2)
    svc.competition_tick()
    serve(svc, launcher)
    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    late = svc.submit(BOB, "k.py", FAST, "add", ["cpu"], Mode.RANKED).submission_id
    serve(svc, launcher)
    assert [r.user_name for r in svc.standings("add", final=True).rows] == ["ann"]

    svc.admit_late(late, actor="admin", reason="a platform outage")
    with svc.db.transaction() as s:
        assert s.scalars(select(FinalStanding)).all() == []
    assert svc.competition_tick() == ["add: queued 1 system tests at the deadline"]  # its own, first
    with svc.db.transaction() as s:
        test = s.scalars(select(SystemTest).where(SystemTest.submission_id == late)).one()
        assert (test.status, test.cases) == ("queued", len(HELD_OUT))
    assert svc.competition_tick() == []  # not before its system test ran
    serve(svc, launcher)
    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    final = svc.standings("add", final=True)
    assert [(r.user_name, r.coverage, r.note) for r in final.rows] == [
        ("bob", "3 of 3 held-out cases", "late, admitted by admin because a platform outage"),
        ("ann", "3 of 3 held-out cases", None),
    ]


def test_a_hidden_board_stays_hidden_until_the_user_joins_with_an_invite(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    board(svc, tmp_path, clock, visible=False)
    assert [b.name for b in svc.list_leaderboards(viewer=BOB)] == []
    with pytest.raises(LeaderboardNotFound):
        svc.submit(BOB, "k.py", SLOW, "add", ["cpu"], Mode.TEST)
    with pytest.raises(LeaderboardNotFound):
        svc.ranking("add", viewer=BOB)

    new = svc.create_invite("add", actor="admin", uses=2, expires_in=timedelta(days=1))
    assert new.code.startswith("kci_") and new.invite.prefix == new.code[:8] and new.invite.uses == 0
    with svc.db.transaction() as s:  # only its hash is kept, and no audit row names it
        assert s.scalars(select(Invite.code_hash)).one() != new.code
        assert all(new.code not in str(a.detail) for a in s.scalars(select(AuditLog)))

    joined = svc.join(BOB, f"  {new.code}\n")
    assert (joined.leaderboard, joined.already) == ("add", False)
    assert svc.join(BOB, new.code).already  # a second join spends no use
    assert [b.name for b in svc.list_leaderboards(viewer=BOB)] == ["add"]
    assert svc.ranking("add", viewer=BOB).entries == ()
    assert svc.task("add", viewer=BOB).name == "add"
    assert svc.standings("add", viewer=BOB).rows == ()
    assert svc.submit(BOB, "k.py", SLOW, "add", ["cpu"], Mode.TEST).submission_id
    assert [b.name for b in svc.list_leaderboards(viewer=CAROL)] == []  # others still do not see it
    with pytest.raises(LeaderboardNotFound):
        svc.task("add", viewer=CAROL)
    assert svc.list_invites("add")[0].uses == 1


def test_codes_that_let_nobody_in_say_why_and_guessing_is_bounded(
    svc: LeaderboardService, settings: CoreSettings, clock: Clock, tmp_path: Path
) -> None:
    board(svc, tmp_path, clock, visible=False)
    with pytest.raises(InvalidChange, match="good for 1 to 10000 joins, not 0"):
        svc.create_invite("add", actor="admin", uses=0)
    once = svc.create_invite("add", actor="admin", uses=1)
    svc.join(ANN, once.code)
    with pytest.raises(InviteError, match="used 1 times, all it allows"):
        svc.join(BOB, once.code)
    soon = svc.create_invite("add", actor="admin", expires_in=timedelta(hours=1))
    clock.now += timedelta(hours=2)
    with pytest.raises(InviteError, match="expired on"):
        svc.join(BOB, soon.code)
    withdrawn = svc.create_invite("add", actor="admin")
    assert svc.revoke_invite(withdrawn.invite.invite_id, actor="admin").revoked_at is not None
    with pytest.raises(InviteError, match="withdrawn"):
        svc.join(BOB, withdrawn.code)
    with pytest.raises(InviteError, match=f"at most {MAX_CODE_CHARS} characters"):
        svc.join(BOB, "kci_" + "x" * 100)
    with pytest.raises(InviteError, match="unknown"):
        svc.join(BOB, "kci_guess")
    settings.invite_failures_per_hour = 4  # bob failed 4 times within the hour (the used-up code, before): now even a
    good = svc.create_invite("add", actor="admin")  # good code waits
    with pytest.raises(RateLimited, match="4 joins with codes that let nobody in"):
        svc.join(BOB, good.code)
    clock.now += timedelta(hours=1, seconds=1)
    assert not svc.join(BOB, good.code).already


def test_invites_are_for_hidden_boards(svc: LeaderboardService, clock: Clock, tmp_path: Path) -> None:
    board(svc, tmp_path, clock)
    with pytest.raises(InvalidChange, match="is public"):
        svc.create_invite("add", actor="admin")


def test_an_admin_lists_adds_and_removes_a_hidden_boards_members(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    board(svc, tmp_path, clock, visible=False)
    assert svc.board_members("add") == ()
    new = svc.create_invite("add", actor="admin", uses=5)
    svc.join(BOB, new.code)
    clock.now += timedelta(minutes=1)
    added = svc.add_member("add", UserRef("discord:42", 42), actor="admin", reason="a judge")
    assert (added.user, added.invite_id, added.invite_prefix) == ("discord:42", None, None)
    assert svc.add_member("add", UserRef("discord:42", 42), actor="admin").joined_at == added.joined_at  # no twice
    members = svc.board_members("add")
    assert [(m.user, m.user_name, m.invite_id, m.invite_prefix) for m in members] == [
        ("local:bob", "bob", new.invite.invite_id, new.code[:8]),
        ("discord:42", "discord:42", None, None),
    ]
    assert all(new.code not in repr(m) for m in members)  # the prefix only, never the code
    assert [b.name for b in svc.list_leaderboards(viewer=UserRef("x", 42))] == ["add"]

    removed = svc.remove_member("add", BOB, actor="admin", reason="left the team")
    assert removed.user == "local:bob"
    assert [b.name for b in svc.list_leaderboards(viewer=BOB)] == []  # hidden from bob again
    with pytest.raises(LeaderboardNotFound):
        svc.ranking("add", viewer=BOB)
    with pytest.raises(NotFound, match="'bob' is no member of 'add'"):
        svc.remove_member("add", BOB, actor="admin")
    with svc.db.transaction() as s:
        acts = [
            (a.action, a.detail.get("user"), a.detail.get("reason"))
            for a in s.scalars(
                select(AuditLog).where(AuditLog.action.in_(["add_member", "remove_member"])).order_by(AuditLog.id)
            )
        ]
    assert acts == [("add_member", "discord:42", "a judge"), ("remove_member", "local:bob", "left the team")]
    svc.update_leaderboard("add", visible=True)
    with pytest.raises(InvalidChange, match="is public"):
        svc.add_member("add", CAROL, actor="admin")
    with pytest.raises(LeaderboardNotFound):
        svc.board_members("nope")
