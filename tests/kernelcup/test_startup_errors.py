"""Start-up failures of the services end in one line naming the setting or the host, not a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelcup.cli import build_app


def last_line(output: str) -> str:
    assert "Traceback" not in output, output
    return output.strip().splitlines()[-1]


def test_serve_on_a_taken_port_names_host_and_port(env: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(build_app(), ["serve", "--port", str(port), "--no-worker"])
    assert result.exit_code == 1
    assert last_line(result.output).startswith(f"error: the API did not start on 127.0.0.1:{port}")


@pytest.mark.parametrize("command", [["worker", "--once"], ["demo"], ["serve", "--no-worker"]])
def test_an_unusable_data_directory_names_the_setting(env: Path, command: list[str]) -> None:
    (env / "file").write_text("")
    result = CliRunner().invoke(build_app(), command, env={"KERNELCUP_DATA_DIR": str(env / "file" / "data")})
    assert result.exit_code == 1
    assert "set KERNELCUP_DATA_DIR" in last_line(result.output)


def test_a_postgres_url_as_hosts_write_it_reaches_the_database(env: Path) -> None:
    from helpers import POSTGRES_URL, postgres_reachable

    if postgres_reachable():
        pytest.skip("no PostgreSQL here")
    url = "postgres" + POSTGRES_URL[POSTGRES_URL.index("://") :]
    result = CliRunner().invoke(build_app(), ["db", "status"], env={"DATABASE_URL": url})
    assert result.exit_code == 0, result.output
    assert result.output.startswith("postgresql+psycopg2://") and "revision" in result.output


def test_db_status_on_a_fresh_data_folder_says_there_is_no_database_yet(env: Path) -> None:
    """A newcomer's walk (2026-11-24): `db status` with a new KERNELCUP_DATA_DIR said it could not reach the database,
    where every other command makes the folder. A status query creates nothing and says what to run."""
    data = env / "fresh" / "data"
    result = CliRunner().invoke(build_app(), ["db", "status"], env={"KERNELCUP_DATA_DIR": str(data)})
    assert result.exit_code == 0, result.output
    assert "revision none" in result.output and "kernelcup db upgrade" in result.output
    assert not data.exists()
