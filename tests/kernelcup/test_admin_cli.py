"""`kernelcup admin ...` (issue 31): the admin API's operations from a shell, through a server with an admin token
and on the local database; a deadline is read in the one format every surface asks for, and a bad one says it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import future, make_problem
from served import Served, served_kernelcup
from sqlalchemy import select
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import open_database
from leaderboards.models import AuditLog
from leaderboards.queue import JobQueue
from leaderboards.results import Scope, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode

FILE = b"def custom_kernel(data):\n    return data\n"
BAD_DATE = (
    "The deadline '31/12/2030' is not a date and time: write it as YYYY-MM-DD HH:MM, in UTC, like 2026-12-31 18:00."
)


def cli(*args: str, token: str | None = None) -> object:
    env = {"COLUMNS": "200", **({"KERNELCUP_TOKEN": token} if token else {})}
    return CliRunner().invoke(build_app(), list(args), env=env)


def said(result: object) -> str:
    return " ".join(result.output.split())  # type: ignore[attr-defined]


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    for var in ("KERNELCUP_SERVER", "KERNELCUP_TOKEN", "DATABASE_URL", "KERNELCUP_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KERNELCUP_CONFIG_DIR", str(tmp_path / "config"))
    (tmp_path / "server").mkdir()
    with served_kernelcup(tmp_path / "server") as s:
        yield s


def test_an_organiser_runs_a_competition_through_the_server(served: Served) -> None:
    s, url = served.service, served.url
    admin = s.create_token(UserRef("root"), scopes=[Scope.SUBMIT, Scope.ADMIN], actor="test").token

    refused = cli("admin", "pause", "add", "--server", url, token=served.token)
    assert refused.exit_code == 1 and "admin" in refused.output  # a competitor's token is not an admin's
    assert not s.leaderboard("add").paused

    paused = cli("admin", "pause", "add", "--server", url, token=admin)
    assert paused.exit_code == 0, paused.output
    assert "add: open, paused;" in paused.output and s.leaderboard("add").paused
    with pytest.raises(Exception, match="paused"):
        s.submit(UserRef("ann"), "k.py", FILE, "add", ["cpu"], Mode.TEST)
    assert cli("admin", "resume", "add", "--server", url, token=admin).exit_code == 0
    assert not s.leaderboard("add").paused

    bad = cli("admin", "deadline", "add", "31/12/2030", "--server", url, token=admin)
    assert bad.exit_code == 1 and BAD_DATE in said(bad)
    moved = cli("admin", "deadline", "add", "2030-12-31 18:00", "--json", "--server", url, token=admin)
    assert moved.exit_code == 0, moved.output
    assert json.loads(moved.stdout)["leaderboard"]["deadline"].startswith("2030-12-31T18:00:00")

    hidden = cli("admin", "hide", "add", "--server", url, token=admin)
    assert hidden.exit_code == 0 and ", hidden;" in hidden.output and "(visible)" in hidden.output
    assert [b.name for b in s.list_leaderboards()] == []
    assert cli("admin", "show", "add", "--server", url, token=admin).exit_code == 0
    assert [b.name for b in s.list_leaderboards()] == ["add"]

    limited = cli("admin", "rate-limit", "add", "5", "--server", url, token=admin)
    assert limited.exit_code == 0 and "rate limit 5/hour" in limited.output
    reset = cli("admin", "rate-limit", "add", "--default", "--server", url, token=admin)
    assert "rate limit the server's default" in reset.output and s.leaderboard("add").rate_limit_per_hour is None
    neither = cli("admin", "rate-limit", "add", "--server", url, token=admin)
    assert neither.exit_code == 2 and "--default" in neither.output

    banned = cli("admin", "ban", "local:agent", "--reason", "shared the seed", "--server", url, token=admin)
    assert banned.exit_code == 0, banned.output
    assert "local:agent (agent): banned (shared the seed)" in banned.output
    unbanned = cli("admin", "unban", "agent", "--server", url, token=admin)
    assert "local:agent (agent): not banned" in unbanned.output

    served.client.submission(served.client.submit(("k.py", FILE), "add", ["cpu"], "test").id).wait(timeout=60)
    queue = JobQueue(s.db)
    queue.register_worker("gpu-box", ["H100"])
    queue.set_worker_health("gpu-box", False, "nvidia-smi failed")
    stats = cli("admin", "stats", "--days", "7", "--server", url, token=admin)
    assert stats.exit_code == 0, stats.output
    assert "cpu: 1 succeeded" in stats.output and "1 submissions by 1 users" in stats.output
    assert "gpu-box on " in stats.output and "H100; heartbeat" in stats.output
    assert "UNHEALTHY, claims no jobs: nvidia-smi failed" in said(stats)


def test_the_local_database_is_audited_as_the_shell_user(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELCUP_SERVER", raising=False)
    monkeypatch.setenv("KERNELCUP_CONFIG_DIR", str(env / "config"))
    settings = CoreSettings(_env_file=None, data_dir=env / "data")
    service = LeaderboardService(open_database(settings), settings)
    service.create_leaderboard(make_problem(env / "problems"), deadline=future(), devices=["cpu"])
    service.db.dispose()

    assert cli("admin", "pause", "add").exit_code == 0
    bad = cli("admin", "deadline", "add", "31/12/2030")
    assert bad.exit_code == 1 and BAD_DATE in said(bad)
    assert cli("admin", "deadline", "add", "2030-12-31").exit_code == 0
    audit = cli("leaderboard", "audit", "--since", "31/12/2030")  # the audit filter reads the same format
    assert audit.exit_code == 1 and "The since '31/12/2030' is not a date and time" in said(audit)
    assert "pause" in cli("leaderboard", "audit", "--since", "2020-01-01 00:00").output
    banned = cli("admin", "ban", "discord:42", "--reason", "spam")
    assert banned.exit_code == 0 and "discord:42" in banned.output and "banned (spam)" in banned.output

    with open_database(settings).transaction() as s:
        entries = s.scalars(select(AuditLog).order_by(AuditLog.id)).all()
        acts = [(e.action, e.actor) for e in entries if e.actor.startswith("shell:")]
    assert [(action, actor.rsplit(" (", 1)[1]) for action, actor in acts] == [
        ("pause", "kernelcup admin pause)"),
        ("update_leaderboard", "kernelcup admin deadline)"),
        ("ban", "kernelcup admin ban)"),
    ]
    assert LeaderboardService(open_database(settings), settings).leaderboard("add").deadline.isoformat() == (
        "2030-12-31T00:00:00+00:00"
    )
