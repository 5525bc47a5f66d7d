"""`kernelcup leaderboard standings|late|admit`, `kernelcup invites` and `kernelcup join` through a server (an
in-process one on a loopback port) and on the local database (issue 29): standings with ties, intervals and late
notes; practice after the deadline and its admission; a private board that shows after its invite code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import future, make_problem
from served import Served, served_kernelcup
from sqlalchemy import select
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import open_database
from leaderboards.models import AuditLog
from leaderboards.results import Scope, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings

FILE = b"def custom_kernel(data):\n    return data\n# median 700\n"


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    for var in ("KERNELCUP_SERVER", "KERNELCUP_TOKEN", "DATABASE_URL", "KERNELCUP_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KERNELCUP_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "server").mkdir()
    with served_kernelcup(tmp_path / "server") as s:
        yield s


def cli(*args: str, token: str | None = None) -> object:
    return CliRunner().invoke(build_app(), list(args), env={"KERNELCUP_TOKEN": token} if token else {})


def test_standings_practice_and_admission_through_a_server(served: Served) -> None:
    s, url = served.service, served.url
    admin = s.create_token(UserRef("root"), scopes=[Scope.SUBMIT, Scope.ADMIN], actor="test").token
    served.client.submission(served.client.submit(("k.py", FILE), "add", ["cpu"], "ranked").id).wait(timeout=60)
    live = cli("leaderboard", "standings", "add", "-d", "cpu", "--server", url)  # a public read: no token
    assert live.exit_code == 0, live.output
    assert "add on cpu: live standings" in live.output and "agent" in live.output and "700 ns" in live.output

    s.update_leaderboard("add", deadline=s.clock() - timedelta(minutes=1), force=True, actor="test")
    late = served.client.submit(("late.py", FILE.replace(b"700", b"500")), "add", ["cpu"], "ranked", force=True)
    served.client.submission(late.id).wait(timeout=60)
    mine = cli("submissions", "list", "--server", url, token=served.token)
    assert "after the deadline: unranked practice" in mine.output  # the author's own view says so
    listed = cli("leaderboard", "late", "add", "--server", url)
    assert listed.exit_code == 0, listed.output
    assert f"#{late.id} agent late.py ranked" in listed.output
    assert "[after the deadline: unranked practice]" in listed.output
    refused = cli("leaderboard", "admit", str(late.id), "--reason", "outage", "--server", url, token=served.token)
    assert refused.exit_code == 1 and "admin" in refused.output
    admitted = cli("leaderboard", "admit", str(late.id), "--reason", "the queue was down", "--server", url, token=admin)
    assert admitted.exit_code == 0, admitted.output
    assert "late, admitted by" in admitted.output and "because the queue was down" in admitted.output

    assert s.competition_tick() == ["add: froze the final standings on cpu", "add: froze the final standings on H100"]
    final = cli("leaderboard", "standings", "add", "-d", "cpu", "--final", "--json", "--server", url)
    assert final.exit_code == 0, final.output
    [view] = json.loads(final.stdout)
    row = view["rows"][0]
    assert (view["final"], row["rank"], row["submission_id"]) == (True, 1, late.id)
    assert row["low_ns"] < row["score_ns"] < row["high_ns"] and "because the queue was down" in row["note"]
    shown = cli("leaderboard", "standings", "add", "-d", "cpu", "--final", "--server", url)
    assert "95% interval" in shown.output and "held-out" in shown.output and "frozen" in shown.output


def test_invites_and_join_through_a_server(served: Served) -> None:
    s, url = served.service, served.url
    admin = s.create_token(UserRef("root"), scopes=[Scope.SUBMIT, Scope.ADMIN], actor="test").token
    s.update_leaderboard("add", visible=False, actor="test")
    assert "add" not in cli("leaderboard", "list", "--server", url, token=served.token).output
    made = cli("invites", "create", "add", "--uses", "1", "--days", "2", "--server", url, token=admin)
    assert made.exit_code == 0, made.output
    code = made.stdout.strip()
    assert code.startswith("kci_") and "shown only now" in made.stderr
    listed = cli("invites", "list", "--server", url, token=admin)
    assert "used 0 of 1" in listed.output and code[:8] in listed.output and code not in listed.output
    wrong = cli("join", "kci_nope", "--server", url, token=served.token)
    assert wrong.exit_code == 1 and "unknown" in wrong.output
    joined = cli("join", code, "--server", url, token=served.token)
    assert joined.exit_code == 0 and "add: you're in" in joined.output
    assert "add" in cli("leaderboard", "list", "--server", url, token=served.token).output
    assert "add" not in cli("leaderboard", "list", "--server", url).output  # nobody else sees it
    refused = cli("invites", "members", "add", "--server", url, token=served.token)  # a member is no admin
    assert refused.exit_code == 1 and "admin" in refused.output and "agent" not in refused.stdout
    members = cli("invites", "members", "add", "--server", url, token=admin)
    assert members.exit_code == 0, members.output
    assert "agent (local:agent) joined" in members.output and f"invite #1 ({code[:8]}…)" in members.output
    assert code not in members.output
    removed = cli("invites", "remove", "add", "local:agent", "--reason", "left", "--server", url, token=admin)
    assert removed.exit_code == 0 and removed.output.startswith("Removed: agent (local:agent)")
    assert "add" not in cli("leaderboard", "list", "--server", url, token=served.token).output
    added = cli("invites", "add", "add", "agent", "--server", url, token=admin)
    assert added.exit_code == 0 and "added by an admin" in added.output
    revoked = cli("invites", "revoke", "1", "--server", url, token=admin)
    assert revoked.exit_code == 0 and "withdrawn" in revoked.output


def test_invites_and_join_on_the_local_database(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCUP_SERVER", "local")
    settings = CoreSettings(_env_file=None, data_dir=env / "data")
    service = LeaderboardService(open_database(settings), settings)
    service.create_leaderboard(make_problem(env / "problems"), deadline=future(), devices=["cpu"], visible=False)
    made = cli("invites", "create", "add", "--never-expires")
    assert made.exit_code == 0, made.output
    assert "used 0 of 1, expires never" in made.stderr
    joined = cli("join", made.stdout.strip(), "--user", "zoe")
    assert joined.exit_code == 0 and "add: you're in" in joined.output
    assert [b.name for b in service.list_leaderboards(viewer=UserRef("zoe"))] == ["add"]
    assert "zoe (local:zoe) joined" in cli("invites", "members", "add").output
    assert cli("invites", "remove", "add", "zoe").exit_code == 0
    assert "add has no members" in cli("invites", "members", "add").output
    missing = cli("invites", "remove", "add", "zoe")
    assert missing.exit_code == 1 and "'zoe' is no member of 'add'" in missing.output
    with service.db.transaction() as s:  # audited as the shell user
        assert s.scalars(select(AuditLog.actor).where(AuditLog.action == "create_invite")).one().startswith("shell:")
