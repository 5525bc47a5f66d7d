"""`kernelcup bot`: what ends it at once (no token, a refused token, no database), and the in-process worker."""

from __future__ import annotations

from pathlib import Path

import discord
import pytest
from typer.testing import CliRunner

import bot.run
from kernelcup.cli import build_app
from leaderboards.worker import Worker


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A clean environment: no .env in the working directory, the embedded database in a temporary folder."""
    monkeypatch.chdir(tmp_path)
    for name in ("DISCORD_TOKEN", "DATABASE_URL", "KERNELCUP_DATABASE_URL", "DISCORD_GUILD_ID", "DISCORD_ADMIN_ROLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DISCORD_GUILD_IDS", "1100000000000000001")
    monkeypatch.setenv("DISCORD_ADMIN_ROLE_IDS", "1100000000000000002")
    return {}


def invoke(*args: str, **env: str):
    return CliRunner().invoke(build_app(), ["bot", *args], env=env or None)


def test_missing_token_names_the_setting(env) -> None:
    result = invoke("--no-worker")
    assert result.exit_code == 1
    assert "DISCORD_TOKEN is required but not set" in result.output


def test_refused_token_ends_it_at_once_and_names_the_setting(env, monkeypatch: pytest.MonkeyPatch) -> None:
    logins = []

    async def refuse(self, token: str) -> None:
        logins.append(token)
        raise discord.LoginFailure("Improper token has been passed.")

    monkeypatch.setattr(discord.Client, "login", refuse)
    result = invoke(DISCORD_TOKEN="not-a-token")
    assert result.exit_code == 1
    assert logins == ["not-a-token"]
    assert "Discord refused the token in DISCORD_TOKEN" in result.output
    assert "not-a-token" not in result.output  # the token itself is never printed


def test_unreachable_database_ends_it_before_discord_is_asked(env, monkeypatch: pytest.MonkeyPatch) -> None:
    async def login(self, token: str) -> None:
        raise AssertionError("must not log in without a database")

    monkeypatch.setattr(discord.Client, "login", login)
    # Port 9 on loopback: nothing listens there, the connection is refused at once.
    result = invoke(DISCORD_TOKEN="t", DATABASE_URL="postgresql+psycopg2://kc@127.0.0.1:9/kc")
    assert result.exit_code == 1
    assert "Cannot reach the database" in result.output and "DATABASE_URL" in result.output


@pytest.mark.parametrize(("args", "with_worker"), [((), True), (("--no-worker",), False)])
def test_worker_runs_in_process_unless_no_worker(env, monkeypatch: pytest.MonkeyPatch, args, with_worker) -> None:
    started = []

    async def fake_run_bot(service, settings, *, worker=None, reference_check=None, device_check=None) -> None:
        started.append((settings.token.get_secret_value(), worker))
        assert callable(reference_check) and device_check("H100") is None  # /admin sync checks as the CLI does

    monkeypatch.setattr(bot.run, "run_bot", fake_run_bot)
    result = invoke(*args, "--launcher", "local", DISCORD_TOKEN="t0k3n")
    assert result.exit_code == 0, result.output
    [(token, worker)] = started
    assert token == "t0k3n"
    assert isinstance(worker, Worker) is with_worker


def test_the_servers_and_admin_roles_are_required_by_id(env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISCORD_GUILD_IDS")
    monkeypatch.delenv("DISCORD_ADMIN_ROLE_IDS")
    result = invoke("--no-worker", DISCORD_TOKEN="t")
    assert result.exit_code == 1
    assert "setting DISCORD_GUILD_IDS is required but not set" in result.output
    assert "setting DISCORD_ADMIN_ROLE_IDS is required but not set" in result.output


def test_an_admin_role_given_by_name_is_refused_at_start(env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISCORD_ADMIN_ROLE_IDS")
    result = invoke("--no-worker", DISCORD_TOKEN="t", DISCORD_ADMIN_ROLE="kernelcup-admin")
    assert result.exit_code == 1
    assert "'kernelcup-admin' is not a role id (DISCORD_ADMIN_ROLE, which took a name" in result.output
    assert "Copy Role ID" in result.output


def test_the_old_single_server_setting_still_names_the_server(env, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.settings import BotSettings

    monkeypatch.delenv("DISCORD_GUILD_IDS")
    monkeypatch.setenv("DISCORD_GUILD_ID", "42")
    assert BotSettings(_env_file=None, token="t").guild_ids == [42]


def closed_port() -> int:
    """A loopback port that nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_discord_is_one_line_naming_the_host(env, monkeypatch: pytest.MonkeyPatch) -> None:
    port = closed_port()
    monkeypatch.setattr(discord.http.Route, "BASE", f"http://127.0.0.1:{port}/api/v10")
    result = invoke("--no-worker", DISCORD_TOKEN="t0k3n")
    assert result.exit_code == 1
    assert "Traceback" not in result.output and "aiohttp" not in result.output
    [line] = result.output.strip().splitlines()[-1:]
    assert line.startswith("error: Discord cannot be reached at 127.0.0.1:") and str(port) in line
    assert "t0k3n" not in result.output
