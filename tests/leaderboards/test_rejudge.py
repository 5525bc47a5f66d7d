"""Rejudge and drift (issue 29): entries run again below everyone's submissions, their old results kept, their drift
recorded; a runner that reports a new torch re-times the top entries, the board shows "re-timed on torch X", and a
reference that drifted more than 5% opens an admin alert that holds the board's announcements."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import write_problem
from sqlalchemy import func, select

from leaderboards.db import Database
from leaderboards.errors import InvalidChange
from leaderboards.models import AuditLog, Rejudge, Run
from leaderboards.problems import load_problem
from leaderboards.rejudge import RejudgeRunner
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import BaselineResult, Mode, RunRequest, RunResult, SystemInfo
from runners.launchers.fake import FakeLauncher, accepted_result

FAST = b"def custom_kernel(data):\n    return data\n"
SLOW = b"def custom_kernel(data):\n    return list(data)\n"
LATE = b"def custom_kernel(data):\n    return [*data]\n"
SPEED = {FAST: 500.0, SLOW: 1000.0, LATE: 2000.0}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2031, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class FakeRunner:
    """A runner on some torch: each file at its speed times ``factor``, the reference at ``reference_ns``."""

    torch: str = "2.5.0"
    factor: float = 1.0
    reference_ns: float = 800.0
    seen: list[bytes] = field(default_factory=list)

    def __call__(self, request: RunRequest) -> RunResult:
        self.seen.append(request.submission.content)
        result = accepted_result(request, SPEED.get(request.submission.content, 1500.0) * self.factor)
        reference = BaselineResult(
            label="reference", function="ref_kernel", case_medians_ns=[self.reference_ns] * len(result.benchmarks)
        )
        system = SystemInfo(device="cpu", torch=self.torch, triton="3.1.0", driver="550.54")
        return result.model_copy(update={"system": system, "baselines": [reference]})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock) -> LeaderboardService:
    service = LeaderboardService(database, settings.model_copy(update={"retime_top": 2}), clock=clock)
    service.create_leaderboard(
        load_problem(write_problem(tmp_path / "problems")), deadline=clock.now + timedelta(days=1), devices=["cpu"]
    )
    return service


def serve(service: LeaderboardService, runner: FakeRunner) -> None:
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    launcher = FakeLauncher(runner)
    asyncio.run(
        Worker(service, lambda _d: launcher, settings, rejudges=RejudgeRunner(service, lambda _d: launcher, 10.0)).run(
            once=True
        )
    )


def submit(service: LeaderboardService, user: str, code: bytes) -> int:
    return service.submit(UserRef(user), "k.py", code, "add", ["cpu"], Mode.RANKED).submission_id


def test_a_rejudge_waits_below_submissions_keeps_the_old_runs_and_records_the_drift(
    svc: LeaderboardService, database: Database
) -> None:
    runner = FakeRunner()
    fast, slow = submit(svc, "alice", FAST), submit(svc, "bob", SLOW)
    serve(svc, runner)
    queued = svc.queue_rejudges("add", actor="discord:1", top=1)
    assert [(r.submission_id, r.status, r.old_score_ns) for r in queued] == [(fast, "queued", pytest.approx(500.0))]
    late = submit(svc, "carol", LATE)  # a person's submission queued after the rejudge runs before it
    runner.factor, runner.seen = 0.97, []
    serve(svc, runner)
    assert runner.seen == [LATE, LATE, FAST, FAST]
    (done,) = svc.rejudges("add")
    assert (done.status, done.passed, done.runtime) == ("done", True, "torch 2.5.0")
    assert done.new_score_ns == pytest.approx(485.0) and done.drift == pytest.approx(-0.03)
    assert done.text == "re-timed on torch 2.5.0: \u22123.0%"
    assert svc.drift_notes("add", "cpu") == {fast: done.text}
    assert [(r.submission_id, r.note) for r in svc.standings("add").rows][:2] == [(fast, done.text), (slow, None)]
    ranking = svc.ranking("add", "cpu").entries
    assert [(e.submission_id, e.score_ns) for e in ranking] == [
        (fast, pytest.approx(500.0)), (slow, pytest.approx(1000.0)), (late, pytest.approx(1940.0))]  # fmt: skip
    with database.transaction() as s:  # the old runs stay, the rejudge stored none
        assert s.scalar(select(func.count()).select_from(Run).where(Run.submission_id == fast)) == 2
        audit = s.scalar(select(AuditLog).where(AuditLog.action == "rejudge"))
        assert audit is not None and audit.actor == "discord:1" and audit.detail["entries"] == 1


def test_a_rejudge_is_queued_once_and_bounded(svc: LeaderboardService) -> None:
    submit(svc, "alice", FAST)
    serve(svc, FakeRunner())
    assert len(svc.queue_rejudges("add", actor="a", top=5)) == 1
    assert svc.queue_rejudges("add", actor="a", top=5) == ()  # still queued: not twice
    with pytest.raises(InvalidChange, match="--top must be from 1 to 1000"):
        svc.queue_rejudges("add", actor="a", top=0)


def test_a_new_torch_retimes_the_top_entries_and_a_drifted_reference_holds_announcements(
    svc: LeaderboardService, database: Database
) -> None:
    runner = FakeRunner(torch="2.5.0", reference_ns=800.0)
    fast, slow = submit(svc, "alice", FAST), submit(svc, "bob", SLOW)
    submit(svc, "dave", LATE)
    serve(svc, runner)
    assert svc.rejudges("add") == ()  # the device's first runtime: nothing to compare with
    svc.claim_announcements("bot")  # what was announced before the change
    runner.torch, runner.factor, runner.reference_ns = "2.6.0", 0.988, 880.0  # the reference is 10% slower
    submit(svc, "carol", LATE)
    serve(svc, runner)
    retimed = svc.rejudges("add")
    assert {r.submission_id for r in retimed} == {fast, slow}  # retime_top = 2
    assert {r.trigger for r in retimed} == {"runtime"}
    notes = svc.drift_notes("add", "cpu")
    assert notes[fast] == "re-timed on torch 2.6.0: \u22121.2%"
    assert all(r.reference_drift == pytest.approx(0.10) for r in retimed)
    (alert,) = svc.alerts()
    assert alert.kind == "reference_drift" and alert.holds_announcements and alert.leaderboard == "add"
    assert "+10.0%" in alert.message and "torch 2.6.0" in alert.message
    with database.transaction() as s:
        actions = set(s.scalars(select(AuditLog.action).where(AuditLog.actor == "runtime")))
    assert {"runtime_changed", "alert"} <= actions
    submit(svc, "erin", FAST)  # a new #1: its rank change waits while the alert is open
    serve(svc, runner)
    assert svc.claim_announcements("bot") == ()
    svc.resolve_alert(alert.alert_id, actor="discord:1", reason="the new torch is slower for everyone")
    assert [c.user_name for c in svc.claim_announcements("bot")] == ["carol", "erin"]  # carol: #3, held too
    assert svc.alerts() == ()


def test_a_runtime_seen_before_queues_nothing(svc: LeaderboardService, database: Database) -> None:
    runner = FakeRunner(torch="2.5.0")
    submit(svc, "alice", FAST)
    serve(svc, runner)
    submit(svc, "bob", SLOW)
    serve(svc, runner)
    with database.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Rejudge)) == 0
