"""`kernelcup tokens create|list|revoke` on the server's own database: the first admin, programs, revocation."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import open_database
from leaderboards.errors import InvalidToken
from leaderboards.results import Scope
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for var in ("DATABASE_URL", "KERNELCUP_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return {"KERNELCUP_DATA_DIR": str(tmp_path / "data")}


def run(env: dict[str, str], *args: str):
    return CliRunner().invoke(build_app(), list(args), env={**env, "COLUMNS": "200"})


def test_create_list_and_revoke(env: dict[str, str]) -> None:
    r = run(env, "tokens", "create", "root", "--admin", "--expires", "never")
    assert r.exit_code == 0, r.output
    token = r.stdout.strip()
    assert token.startswith("kc_") and "shown only now" in r.stderr and "expires never" in r.stderr
    database = Path(env["KERNELCUP_DATA_DIR"]) / "kernelcup.sqlite3"
    assert f"written to the database sqlite:///{database}" in " ".join(r.stderr.split())  # (a newcomer's wrong one)
    core = CoreSettings(_env_file=None, data_dir=Path(env["KERNELCUP_DATA_DIR"]))
    service = LeaderboardService(open_database(core), core)
    who = service.authenticate(token, Scope.ADMIN)
    assert who.user.identity == "local:root" and who.expires_at is None
    r = run(env, "tokens", "create", "discord:1234", "--bot", "--expires", "30d", "--json")
    made = json.loads(r.stdout)
    assert (
        made["info"]["identity"] == "discord:1234"
        and made["info"]["is_program"]
        and made["info"]["scopes"] == ["submit"]
    )
    r = run(env, "tokens", "list")
    assert r.exit_code == 0 and "discord:1234 (program)" in r.stdout and token[:10] in r.stdout
    assert token not in r.stdout and made["token"] not in r.stdout
    r = run(env, "tokens", "revoke", str(who.token_id))
    assert r.exit_code == 0 and "is revoked" in r.stdout
    with pytest.raises(InvalidToken, match="revoked"):
        service.authenticate(token)
    assert "local:root" not in run(env, "tokens", "list").stdout
    r = run(env, "tokens", "create", "ann", "--expires", "soon")
    assert r.exit_code == 1 and "like 90d" in r.output


def test_a_token_without_expires_lives_as_long_as_the_setting_says(env: dict[str, str]) -> None:
    """A newcomer's walk (2026-11-24): KERNELCUP_TOKEN_EXPIRY_DAYS did nothing, since the CLI (and the API) always
    passed their own 90 days."""
    r = run({**env, "KERNELCUP_TOKEN_EXPIRY_DAYS": "1"}, "tokens", "create", "ann", "--json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)["info"]
    made, expires = (datetime.fromisoformat(info[k]) for k in ("created_at", "expires_at"))
    assert expires - made == timedelta(days=1)


def test_the_database_named_has_no_credentials() -> None:
    from sqlalchemy.engine import make_url

    from kernelcup.commands.tokens import database_name

    url = make_url("postgresql+psycopg://kc:s3cret@db.example:5432/kernelcup?sslpassword=hush")
    assert database_name(url) == "postgresql+psycopg://db.example:5432/kernelcup"
