"""GPU budgets that cannot be escaped, in the core (the red team's findings, ``leaderboards/budgets.py``): a job
cancelled while it runs is charged from its start to the cancel, to the account and the token that sent it (a
queued one nothing); a replay after the board's deadline is practice like any submission then (its limit, one per
device, and the late mark)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import make_problem, run_result
from sqlalchemy import select

from leaderboards.errors import LeaderboardClosed, RateLimited
from leaderboards.models import Job, JobStatus, LateSubmission
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from runners.contract import Mode

BOT = UserRef("bot")
NOON = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def code(n: int) -> bytes:
    return f"def custom_kernel(d):  # {n}\n    return d\n".encode()


def finish(svc: LeaderboardService, submission_id: int) -> None:
    """Store the job's run and end the job, as a worker would."""
    job_id = svc.submission_status_of(submission_id, None, admin=True).jobs[0].job_id
    svc.record_run(job_id, run_result(mode=Mode.BENCHMARK))
    with svc.db.transaction() as s:
        job = s.get(Job, job_id)
        assert job is not None
        job.status, job.verdict, job.finished_at = JobStatus.SUCCEEDED.value, "accepted", svc.clock()


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.clock = Clock(NOON)
    deadline = NOON + timedelta(days=1)
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=deadline, devices=["cpu"])
    return service


def test_a_job_cancelled_while_it_runs_is_charged_from_its_start_to_the_cancel(svc: LeaderboardService) -> None:
    clock: Clock = svc.clock  # type: ignore[assignment]
    token = svc.create_token(BOT, name="program").info.token_id
    svc.set_budget(token_id=token, seconds=60.0, period_s=3600, actor="admin")
    svc.set_budget(user=BOT, seconds=1000.0, period_s=3600, actor="admin")
    running = svc.submit(BOT, "k.py", code(1), "add", ["cpu"], "test", token_id=token).submission_id
    queue = JobQueue(svc.db, clock=svc.clock)
    assert queue.claim("w1", lease_s=600, devices=["cpu"]) is not None
    clock.now += timedelta(seconds=90)  # it runs for a minute and a half, then its author cancels it
    svc.cancel(running, BOT)
    budgets = {v.subject: v for v in svc.budgets_of(BOT, token)}
    assert budgets["token"].spent_s == pytest.approx(90.0) and budgets["token"].left_s == 0
    assert budgets["account"].spent_s == pytest.approx(90.0)

    svc.set_budget(token_id=token, seconds=None, actor="admin")
    queued = svc.submit(BOT, "k.py", code(2), "add", ["cpu"], "test", token_id=token).submission_id
    clock.now += timedelta(seconds=30)
    svc.cancel(queued, BOT)  # it never ran: nothing more is charged
    (account,) = svc.budgets_of(BOT, token)
    assert account.spent_s == pytest.approx(90.0)


def test_a_replay_after_the_deadline_is_practice_within_its_limit(svc: LeaderboardService) -> None:
    clock: Clock = svc.clock  # type: ignore[assignment]
    bench = svc.submit(BOT, "k.py", code(1), "add", ["cpu"], "benchmark").submission_id
    finish(svc, bench)
    clock.now += timedelta(days=2)  # past the deadline
    limited = LeaderboardService(svc.db, svc.settings.model_copy(update={"late_submissions_per_hour": 1}), clock=clock)
    replay = limited.replay(bench, BOT)
    with limited.db.transaction() as s:
        late = s.scalars(select(LateSubmission.submission_id)).all()
    assert late == [replay.submission_id]  # marked late, as a submission after the deadline is
    with pytest.raises(RateLimited, match="practice"):
        limited.replay(bench, BOT)
    closed = LeaderboardService(svc.db, svc.settings.model_copy(update={"late_submissions_per_hour": 0}), clock=clock)
    with pytest.raises(LeaderboardClosed):
        closed.replay(bench, BOT)


@pytest.mark.parametrize("how", ["released", "retried"])
def test_a_compare_is_charged_for_the_attempt_that_completes_it_not_its_waits_in_the_queue(
    svc: LeaderboardService, how: str
) -> None:
    """A fault campaign: a compare given back by a stopping worker (or failed by the platform and retried) kept its
    first start, and two hours in the queue were charged to its author's budget."""
    clock: Clock = svc.clock  # type: ignore[assignment]
    svc.compare(BOT, "a.py", code(1), "b.py", code(2), "add", "cpu", rounds=2)
    svc.set_budget(user=BOT, seconds=600.0, period_s=86400, actor="admin")
    queue = JobQueue(svc.db, clock=svc.clock)
    first = queue.claim("w1", lease_s=600, devices=["cpu"])
    assert first is not None
    clock.now += timedelta(seconds=10)
    if how == "released":
        assert queue.release(first, reason="the worker stopped")
    else:
        queue.retry_or_fail(first, "launcher: boom", backoff_base_s=300, backoff_max_s=300)
    clock.now += timedelta(hours=2)
    second = queue.claim("w2", lease_s=600, devices=["cpu"])
    assert second is not None
    clock.now += timedelta(seconds=20)
    with svc.db.transaction() as s:
        queue.complete(s, second)
    (view,) = svc.budgets_of(BOT)
    assert view.spent_s == pytest.approx(20.0)
