"""An organiser's commands of issue 29: `kernelcup leaderboard moderate|moderated|audit|rejudge|rejudges|alerts`, and
the author's `kernelcup submissions list` saying why an entry is out of the ranking."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from helpers import future, write_problem
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import open_database
from leaderboards.problems import load_problem
from leaderboards.rejudge import RejudgeRunner
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode
from runners.launchers.fake import FakeLauncher

CODE = b"def custom_kernel(d):\n    return d\n"


def run(*args: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_moderate_audit_rejudge_from_the_command_line(env: Path) -> None:
    settings = CoreSettings(_env_file=None, data_dir=env / "data")
    service = LeaderboardService(open_database(settings), settings)
    service.create_leaderboard(load_problem(write_problem(env / "problems")), deadline=future(), devices=["cpu"])
    sid = service.submit(UserRef("ann"), "k.py", CODE, "add", ["cpu"], Mode.RANKED).submission_id
    launcher = FakeLauncher()
    worker_settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    rejudges = RejudgeRunner(service, lambda _d: launcher, 10.0)
    asyncio.run(Worker(service, lambda _d: launcher, worker_settings, rejudges=rejudges).run(once=True))

    done = run("leaderboard", "moderate", str(sid), "quarantined", "--reason", "reads the expected output")
    assert done.exit_code == 0, done.output
    assert f"#{sid} of ann on add: quarantined (reads the expected output)" in done.output
    assert service.ranking("add", "cpu").entries == ()
    mine = run("submissions", "list", "--user", "ann")
    assert mine.exit_code == 0, mine.output
    assert "quarantined: out of every ranking" in mine.output and "reads the expected output" in mine.output
    wrong = run("leaderboard", "moderate", str(sid), "flagged", "--reason", "x")
    assert wrong.exit_code == 1 and "can become hacked or cleared, not flagged" in wrong.output
    listed = run("leaderboard", "moderated", "--state", "quarantined")
    assert f"#{sid} add ann: quarantined by shell:" in listed.output
    run("leaderboard", "moderate", str(sid), "cleared", "--reason", "a false alarm")
    assert [e.submission_id for e in service.ranking("add", "cpu").entries] == [sid]

    audit = run("leaderboard", "audit", "--action", "moderate", "--json")
    assert audit.exit_code == 0, audit.output
    entries = json.loads(audit.output)["entries"]
    assert [e["detail"]["to"] for e in entries] == ["cleared", "quarantined"]
    assert entries[0]["actor"].endswith("(kernelcup leaderboard moderate)")
    paged = run("leaderboard", "audit", "--limit", "1")
    assert "older: --before" in paged.output

    queued = run("leaderboard", "rejudge", "add", "--top", "3", "--device", "cpu")
    assert queued.exit_code == 0, queued.output
    assert "add: queued 1 rejudges" in queued.output and f"cpu: ann #{sid}" in queued.output
    asyncio.run(Worker(service, lambda _d: launcher, worker_settings, rejudges=rejudges).run(once=True))
    shown = run("leaderboard", "rejudges", "add")
    assert f"ann #{sid} (admin): re-timed on this runner: +0.0%" in shown.output
    assert run("leaderboard", "alerts").output.strip() == "no alerts"
    missing = run("leaderboard", "rejudge", "nope")
    assert missing.exit_code == 1 and "nope" in missing.output
