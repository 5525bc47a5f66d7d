"""`kernelcup db backup` and `kernelcup db restore` as an operator runs them (issue 37): the embedded database backed up
to a 0600 file and restored into a new data folder, refusals with the fix in their message, the PostgreSQL URL's
password never printed."""

from __future__ import annotations

import json
import secrets
import stat
from pathlib import Path

import pytest
from helpers import POSTGRES_URL, future, make_problem, postgres_reachable
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import make_engine, open_database
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode

CODE = b"def custom_kernel(data):\n    return data\n"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(build_app(), list(args))
    return result.exit_code, result.output


def seed(data_dir: Path, tmp_path: Path, submissions: int = 5) -> None:
    settings = CoreSettings(_env_file=None, data_dir=data_dir, rate_limit_per_hour=None, duplicate_window_s=0)
    db = open_database(settings)
    service = LeaderboardService(db, settings)
    service.create_leaderboard(make_problem(tmp_path / "problems"), deadline=future(), devices=["cpu"])
    for i in range(submissions):
        service.submit(UserRef(f"u{i}"), "s.py", CODE + f"# {i}\n".encode(), "add", ["cpu"], Mode.BENCHMARK)
    db.dispose()


def test_backup_then_restore_into_a_new_data_folder(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(env / "data", env)
    code, out = invoke("db", "backup", "kc.backup")
    assert code == 0, out
    assert "sqlite backup" in out and "5 submissions" in out
    assert stat.S_IMODE((env / "kc.backup").stat().st_mode) == 0o600

    code, out = invoke("db", "backup", "kc.backup")
    assert code == 1 and "already exists" in out and "--force" in out

    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(env / "restored"))
    code, out = invoke("db", "restore", "kc.backup", "--json")
    assert code == 0, out
    info = json.loads(out)
    assert info["tables"]["submissions"] == 5 and info["needs_upgrade"] is False
    assert stat.S_IMODE((env / "restored" / "kernelcup.sqlite3").stat().st_mode) == 0o600
    code, out = invoke("db", "upgrade")
    assert code == 0 and "already at revision" in out

    code, out = invoke("db", "restore", "kc.backup")
    assert code == 1 and "not empty" in out and "submissions: 5" in out and "--force" in out
    code, out = invoke("db", "restore", "kc.backup", "--force")
    assert code == 0 and "restored" in out and "5 submissions" in out


def test_a_portable_backup_from_the_cli(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(env / "data", env, submissions=3)
    code, out = invoke("db", "backup", "kc.jsonl.gz", "--format", "portable", "--json")
    assert code == 0, out
    assert json.loads(out)["kind"] == "portable"
    code, out = invoke("db", "backup", "x", "--format", "zip")
    assert code == 1 and "Unknown backup format 'zip'" in out
    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(env / "restored"))
    code, out = invoke("db", "restore", "kc.jsonl.gz")
    assert code == 0 and "(portable)" in out and "3 submissions" in out


def test_every_command_has_help() -> None:
    for command in ("backup", "restore"):
        code, out = invoke("db", command, "--help")
        assert code == 0 and "--force" in out and "--json" in out


@pytest.mark.postgres
def test_postgres_backup_and_restore_never_print_the_password(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = postgres_reachable()
    if reason:
        pytest.skip(reason)
    password = "pw-" + secrets.token_hex(8)
    names = [f"kc_cli_{secrets.token_hex(5)}" for _ in range(2)]
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        for name in names:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    base = make_engine(POSTGRES_URL).url.set(password=password)  # trust auth: the password is accepted, unused
    try:
        monkeypatch.setenv("DATABASE_URL", base.set(database=names[0]).render_as_string(hide_password=False))
        code, out = invoke("db", "upgrade")
        assert code == 0, out
        code, out = invoke("db", "backup", "kc.dump")
        assert code == 0 and "postgresql backup" in out, out
        assert stat.S_IMODE((env / "kc.dump").stat().st_mode) == 0o600

        monkeypatch.setenv("DATABASE_URL", base.set(database=names[1]).render_as_string(hide_password=False))
        code, restored = invoke("db", "restore", "kc.dump")
        assert code == 0 and "restored" in restored, restored
        monkeypatch.setenv("DATABASE_URL", base.set(database="kc_missing").render_as_string(hide_password=False))
        code, failed = invoke("db", "backup", "other.dump")
        assert code == 1 and "kc_missing" in failed
        for output in (out, restored, failed):
            assert password not in output
    finally:
        with admin.connect() as conn:
            for name in names:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
