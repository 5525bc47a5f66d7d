"""`kernelcup leaderboard update` (issue 37): renaming a live leaderboard or moving its deadline into the past says
what it affects and exits 1 until --force; the audit log names the shell user, the old and the new value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from helpers import future, make_problem, run_result
from sqlalchemy import select
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import open_database
from leaderboards.models import AuditLog
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode

CODE = b"def custom_kernel(data):\n    return data\n"


def service_at(data: Path) -> LeaderboardService:
    settings = CoreSettings(_env_file=None, data_dir=data)
    return LeaderboardService(open_database(settings), settings)


def run(*args: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_update_refuses_a_live_rename_and_deadline_until_forced(env: Path) -> None:
    service = service_at(env / "data")
    service.create_leaderboard(make_problem(env / "problems"), deadline=future(), devices=["cpu"])
    receipt = service.submit(
        UserRef("ann"), "k.py", b"def custom_kernel(d):\n    return d\n", "add", ["cpu"], Mode.RANKED
    )
    service.record_run(receipt.jobs[0].job_id, run_result([100.0]))  # still running: a live job
    service.db.dispose()

    refused = run("leaderboard", "update", "add", "--rename", "add-2026")
    assert refused.exit_code == 1
    assert "1 queued or running job and 0 ranked entries (of ann)" in refused.output and "--force" in refused.output
    closing = run("leaderboard", "update", "add", "--deadline", "2020-01-01 00:00")
    assert closing.exit_code == 1 and "moving its deadline into the past (2020-01-01 00:00 UTC)" in closing.output
    later = (datetime.now(UTC) + timedelta(days=60)).strftime("%Y-%m-%d %H:%M")
    assert run("leaderboard", "update", "add", "--deadline", later).exit_code == 0  # later needs nothing

    done = run("leaderboard", "update", "add", "--rename", "add-2026", "--force")
    assert done.exit_code == 0 and "add-2026 updated: name" in done.output
    service = service_at(env / "data")
    assert service.leaderboard("add-2026").name == "add-2026"
    with service.db.transaction() as s:
        rows = s.scalars(select(AuditLog).where(AuditLog.action == "update_leaderboard").order_by(AuditLog.id)).all()
        moved, renamed = rows
        assert moved.actor.startswith("shell:") and moved.detail["forced_while_live"] is False
        assert renamed.detail["old"] == {"name": "add"} and renamed.detail["new"] == {"name": "add-2026"}
        assert renamed.detail["forced_while_live"] is True and renamed.detail["live"]["live_jobs"] == 1
    service.db.dispose()
