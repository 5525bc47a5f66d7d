"""Database fixtures: every test that takes ``database`` (or ``service``) runs on SQLite and on PostgreSQL.

The PostgreSQL variant is skipped when the server is unreachable (it is reachable in CI).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import PostgresSchema, migrated_sqlite_template, postgres_reachable, sqlite_database

from leaderboards.db import Database
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return migrated_sqlite_template(tmp_path_factory.mktemp("sqlite-template"))


@pytest.fixture(scope="session")
def postgres_schema() -> Iterator[PostgresSchema]:
    reason = postgres_reachable()
    if reason:
        pytest.skip(reason)
    schema = PostgresSchema()
    schema.create()
    yield schema
    schema.drop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """An empty, migrated database: a fresh SQLite file, or the session's PostgreSQL schema emptied after use."""
    if request.param == "sqlite":
        db = sqlite_database(request.getfixturevalue("sqlite_template"), tmp_path / "kernelcup.sqlite3")
        yield db
        db.dispose()
        return
    schema: PostgresSchema = request.getfixturevalue("postgres_schema")
    db = schema.database()
    try:
        yield db
    finally:
        db.dispose()
        schema.truncate()


@pytest.fixture
def settings(tmp_path: Path) -> CoreSettings:
    """Core settings independent of the environment and any .env file."""
    return CoreSettings(
        _env_file=None,
        database_url=None,
        data_dir=tmp_path / "data",
        rate_limit_per_hour=None,
        ranked_rate_limit_per_hour=None,
        max_new_files_per_day=None,
        duplicate_window_s=0,
    )


@pytest.fixture
def service(database: Database, settings: CoreSettings) -> LeaderboardService:
    return LeaderboardService(database, settings)


@pytest.fixture
def cli(database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run `kernelcup ...` against the test database; returns (exit code, stdout, stderr)."""
    from helpers import check_reference_in_process
    from typer.testing import CliRunner

    from kernelcup.cli import build_app

    monkeypatch.setenv("DATABASE_URL", database.engine.url.render_as_string(hide_password=False))
    monkeypatch.chdir(tmp_path)  # no .env from the repository

    def invoke(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(build_app(reference_check=lambda: check_reference_in_process), list(args))
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout, result.stderr

    return invoke
