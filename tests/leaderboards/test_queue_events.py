"""Following a submission's progress from job_events: order, queue positions, the end, and the time bound."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import future, make_problem, run_result

from leaderboards.errors import SubmissionNotFound
from leaderboards.events import FollowTimeout, follow
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    return service


def submit(svc: LeaderboardService, user: str) -> int:
    code = f"def custom_kernel(d):  # {user}\n    return d\n".encode()
    return svc.submit(UserRef(user), "s.py", code, "add", ["cpu"], "test").submission_id


def test_follow_reports_position_then_times_out(svc: LeaderboardService) -> None:
    submit(svc, "first")
    second = submit(svc, "second")
    seen = []
    with pytest.raises(FollowTimeout, match=f"#{second}"):
        for update in follow(svc.db, second, poll_s=0.05, timeout_s=0.3):
            seen.append((update.phase, update.detail))
    assert ("queued", "position 2 in the queue") in seen
    assert seen.count(("queued", "position 2 in the queue")) == 1  # only when it changes


def test_follow_yields_every_event_in_order_and_ends_when_done(svc: LeaderboardService) -> None:
    sub = submit(svc, "ann")
    queue = JobQueue(svc.db)
    claim = queue.claim("w", lease_s=30)
    assert claim is not None
    assert queue.add_event(claim, "testing", "test 1/1")
    with svc.db.transaction() as s:
        svc.record_run(claim.job_id, run_result(), owner=claim.owner, session=s)
        queue.complete(s, claim, detail="accepted")
    phases = [(u.phase, u.detail) for u in follow(svc.db, sub, poll_s=0.05, timeout_s=5)]
    assert [p for p, _ in phases] == ["queued", "started", "testing", "done"]
    assert phases[-1] == ("done", "accepted")


def test_follow_unknown_submission(svc: LeaderboardService) -> None:
    with pytest.raises(SubmissionNotFound):
        next(follow(svc.db, 999, timeout_s=1))
