"""A NUL character anywhere a submission can put one (its stdout, its messages) is stored, on SQLite and on
PostgreSQL, which refuses U+0000 in text and JSONB: the run is recorded once, never retried as the platform's failure
(red team, 2026-11-24)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from helpers import future, make_problem
from sqlalchemy import select

from leaderboards.models import Job, without_nul
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.spool import ResultSpool
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import RunRequest, RunResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result

FAST = WorkerSettings(
    _env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.01, backoff_base_s=0, backoff_max_s=0, stop_grace_s=0.5
)


def test_without_nul_replaces_it_in_every_string_and_key() -> None:
    value = {"a\x00": ["x\x00y", {"k": "\x00"}, 3, None], "b": ("t\x00",)}
    assert without_nul(value) == {"a\ufffd": ["x\ufffdy", {"k": "\ufffd"}, 3, None], "b": ["t\ufffd"]}
    assert without_nul(None) is None and without_nul(2.5) == 2.5


def test_a_nul_in_a_result_is_stored_once(service: LeaderboardService, tmp_path: Path) -> None:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    code = b"def custom_kernel(d):\n    return d\n"
    ok = service.submit(UserRef("ann"), "s.py", code, "add", ["cpu"], "test").submission_id
    bad = service.submit(UserRef("bob"), "t.py", code + b"# wrong\n", "add", ["cpu"], "test").submission_id

    def respond(request: RunRequest) -> RunResult:
        if b"# wrong" in request.submission.content:
            return RunResult(verdict=Verdict.RUNTIME_ERROR, mode=request.mode, message="boom\x00 at call 1",
                             stderr="Traceback\x00\n")  # fmt: skip
        return accepted_result(request).model_copy(update={"stdout": "hello\x00world\n"})

    launcher = FakeLauncher(respond, remote_refs=False)
    worker = Worker(service, lambda _device: launcher, FAST, spool=ResultSpool(tmp_path / "spool"))
    asyncio.run(asyncio.wait_for(worker.run(once=True), 60))
    assert len(launcher.requests) == 2  # one run each: nothing was retried
    with service.db.transaction() as s:
        jobs = {j.submission_id: j for j in s.scalars(select(Job))}
        assert [jobs[i].attempts for i in (ok, bad)] == [1, 1]
    assert not list((tmp_path / "spool").glob("*"))  # both results stored, none left waiting on disk
    good = service.submission_details(ok, UserRef("ann"))
    assert good.status.accepted and good.results[0].result.stdout == "hello\ufffdworld\n"
    failed = service.submission_details(bad, UserRef("bob"))
    assert failed.results[0].result.verdict is Verdict.RUNTIME_ERROR
    assert failed.results[0].result.message == "boom\ufffd at call 1"
    assert "\x00" not in (failed.status.jobs[0].error or "")
    assert worker.healthy
