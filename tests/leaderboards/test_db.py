"""The schema: migrations agree with the models on both dialects, the embedded database migrates itself, and
values that differ between dialects (zones, 64-bit ids, JSON) come back as they went in."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from helpers import PostgresSchema, postgres_reachable
from sqlalchemy import inspect, select

from leaderboards.db import Database, current_revision, head_revision, make_engine, open_database, upgrade
from leaderboards.errors import DatabaseNotReady
from leaderboards.models import Base, Leaderboard, User
from leaderboards.settings import CoreSettings

REPO = Path(__file__).resolve().parents[2]


def test_migrations_match_the_models(database: Database) -> None:
    with database.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    assert diff == []
    assert current_revision(database.engine) == head_revision()


def test_downgrade_to_base_and_back(tmp_path: Path) -> None:
    from alembic import command

    from leaderboards.db import alembic_config

    engine = make_engine(f"sqlite:///{tmp_path / 'x.sqlite3'}")
    upgrade(engine)
    command.downgrade(alembic_config(engine), "base")
    assert set(inspect(engine).get_table_names()) == {"alembic_version"}
    upgrade(engine)
    assert "runs" in inspect(engine).get_table_names()


def test_embedded_sqlite_is_created_and_migrated_on_first_use(tmp_path: Path) -> None:
    settings = CoreSettings(_env_file=None, database_url=None, data_dir=tmp_path / "nested" / "data")
    db = open_database(settings)
    assert Path(settings.resolved_data_dir() / "kernelcup.sqlite3").is_file()
    assert current_revision(db.engine) == head_revision()
    db.dispose()
    open_database(settings).dispose()  # the second open finds it current and does nothing


def test_the_data_dir_and_the_embedded_database_are_private_to_their_user(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual umask: without care, 0755 and 0644, readable by every local user
    try:
        settings = CoreSettings(_env_file=None, database_url=None, data_dir=tmp_path / "nested" / "data")
        db = open_database(settings)
        with db.transaction() as s:
            s.add(User(name="ann", identity="local:ann"))  # a write: SQLite makes its -wal and -shm files
        data_dir, database = settings.resolved_data_dir(), settings.embedded_database_path()
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        assert sorted(p.name for p in data_dir.iterdir()) == [
            "kernelcup.sqlite3",
            "kernelcup.sqlite3-shm",
            "kernelcup.sqlite3-wal",
        ]
        assert {stat.S_IMODE(p.stat().st_mode) for p in data_dir.iterdir()} == {0o600}
        db.dispose()
        database.chmod(0o644)  # made by an earlier version: narrowed at the next start
        open_database(settings).dispose()
        assert stat.S_IMODE(database.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_default_data_dir_is_the_users_data_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("KERNELCUP_DATA_DIR", raising=False)
    settings = CoreSettings(_env_file=None)
    if sys.platform.startswith("linux"):
        assert settings.resolved_data_dir() == tmp_path / "kernelcup"
    assert settings.resolved_database_url().startswith("sqlite:///")
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg2://u@h/db")
    assert CoreSettings(_env_file=None).resolved_database_url() == "postgresql+psycopg2://u@h/db"


@pytest.mark.postgres
def test_postgres_behind_head_is_refused_with_the_command_to_run() -> None:
    reason = postgres_reachable()
    if reason:
        pytest.skip(reason)
    schema = PostgresSchema()
    from helpers import POSTGRES_URL
    from sqlalchemy import create_engine, text

    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema.name}"'))
    admin.dispose()
    try:
        settings = CoreSettings(_env_file=None, database_url=schema.url)
        with pytest.raises(DatabaseNotReady, match="kernelcup db upgrade"):
            open_database(settings)
        env = {"DATABASE_URL": schema.url, "PATH": "/usr/bin:/bin"}
        done = subprocess.run(
            [sys.executable, "-m", "kernelcup.cli", "db", "upgrade"],
            cwd="/",
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "migrated from empty to" in done.stdout
        open_database(settings).dispose()
    finally:
        schema.drop()


def test_unreachable_database_names_the_setting(tmp_path: Path) -> None:
    settings = CoreSettings(_env_file=None, database_url=f"sqlite:///{tmp_path}/missing/dir/x.sqlite3")
    with pytest.raises(DatabaseNotReady, match=r"\(check DATABASE_URL\)"):
        open_database(settings)


def test_db_upgrade_works_from_any_directory(tmp_path: Path) -> None:
    env = {"KERNELCUP_DATA_DIR": str(tmp_path / "d"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    run = [sys.executable, "-m", "kernelcup.cli", "db"]
    done = subprocess.run([*run, "upgrade"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"migrated from empty to {head_revision()}" in done.stdout
    again = subprocess.run([*run, "status"], cwd="/", env=env, capture_output=True, text=True, timeout=120)
    assert "up to date" in again.stdout, again.stderr


def test_dialect_sensitive_values_round_trip(database: Database) -> None:
    snowflake = 2**63 - 1
    deadline = datetime(2031, 5, 6, 7, 8, 9, tzinfo=timezone(timedelta(hours=2)))
    task = {"files": {"reference.py": "x = 'é'"}, "nested": [1, 2.5, True, None]}
    with database.transaction() as s:
        s.add(User(identity=f"discord:{snowflake}", discord_id=snowflake, name="n"))
        s.add(
            Leaderboard(
                name="lb",
                deadline=deadline,
                task=task,
                lang="py",
                devices=["cpu"],
                ranking_by="geom",
                secret_seed=2**62,
                fingerprint="f" * 64,
            )
        )
    with database.transaction() as s:
        user = s.scalar(select(User))
        lb = s.scalar(select(Leaderboard))
        assert user is not None and lb is not None
        assert user.discord_id == snowflake and not user.is_banned
        assert lb.deadline == deadline and lb.deadline.tzinfo is UTC
        assert lb.task == task and lb.devices == ["cpu"] and lb.visible and not lb.paused
        assert lb.created_at.tzinfo is UTC and abs(lb.created_at - datetime.now(UTC)) < timedelta(minutes=5)


def test_naive_datetimes_are_refused(database: Database) -> None:
    with pytest.raises(Exception, match="naive datetime"), database.transaction() as s:
        s.add(
            Leaderboard(
                name="lb",
                deadline=datetime(2031, 1, 1),
                task={},
                lang="py",
                devices=[],
                ranking_by="geom",
                secret_seed=1,
                fingerprint="",
            )
        )


def test_database_errors_never_show_bound_parameters(database: Database) -> None:
    """A failed statement's message (printed by the CLI, logged by workers) leaves its parameters out: they hold
    secret seeds and submitted code."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    secret = "secret-seed-8675309"
    insert = text("INSERT INTO users (id, identity, name, is_banned) VALUES (1, :identity, 'n', false)")
    with pytest.raises(DBAPIError) as raised, database.transaction() as s:
        s.execute(insert, {"identity": secret})
        s.execute(insert, {"identity": secret})  # the same id again: an integrity error
    assert secret not in str(raised.value)
    assert "hidden" in str(raised.value)


def test_the_problem_column_is_filled_from_existing_snapshots(tmp_path: Path) -> None:
    from alembic import command
    from sqlalchemy import text

    from leaderboards.db import alembic_config

    engine = make_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    command.upgrade(alembic_config(engine), "0002")
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO leaderboards (name, description, deadline, task, lang, devices, ranking_by, secret_seed,"
                " creator, visible, paused, fingerprint, updated_at) VALUES ('lb', '', '2031-01-01 00:00:00',"
                " '{\"problem\": \"vectoradd\", \"files\": {}}', 'py', '[\"cpu\"]', 'geom', 1, '', 1, 0, 'f',"
                " '2030-01-01 00:00:00')"
            )
        )
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT problem FROM leaderboards")).scalar_one() == "vectoradd"
    engine.dispose()


def test_sqlite_migration_0003_keeps_every_row_and_stops_reusing_ids(tmp_path: Path) -> None:
    """0003 rebuilds ``jobs`` and ``submissions`` as AUTOINCREMENT tables on SQLite; with foreign keys on, dropping
    the old table would cascade into runs and events. Down and up again with data in every table: nothing lost."""
    from alembic import command
    from helpers import future, make_problem, run_result
    from sqlalchemy import func, select, text

    from leaderboards.db import Database, alembic_config, make_engine, upgrade
    from leaderboards.models import Job, JobEvent, Run
    from leaderboards.results import UserRef
    from leaderboards.service import LeaderboardService
    from runners.contract import Mode

    engine = make_engine(f"sqlite:///{tmp_path / 'm.sqlite3'}")
    upgrade(engine)
    service = LeaderboardService(Database(engine), CoreSettings(_env_file=None, duplicate_window_s=0))
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    receipts = [service.submit(UserRef("ann"), "s.py", f"# {i}\n".encode(), "add", ["cpu"], "test") for i in range(3)]
    for r in receipts:
        service.record_run(r.jobs[0].job_id, run_result(mode=Mode.TEST))

    def counts() -> tuple[int, int, int]:
        with service.db.transaction() as s:
            return tuple(int(s.scalar(select(func.count()).select_from(t)) or 0) for t in (Job, Run, JobEvent))  # type: ignore[return-value]

    before = counts()
    command.downgrade(alembic_config(engine), "0002")
    upgrade(engine)
    assert counts() == before == (3, 3, 3)
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1  # switched back on for the pool's connection
        assert "AUTOINCREMENT" in conn.execute(text("SELECT sql FROM sqlite_master WHERE name = 'jobs'")).scalar()
    with service.db.transaction() as s:
        s.execute(text("DELETE FROM submissions WHERE id = 3"))
    assert service.submit(UserRef("ann"), "s.py", b"# new\n", "add", ["cpu"], "test").submission_id == 4
    engine.dispose()


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "postgresql+psycopg2"])
def test_postgres_urls_as_hosts_hand_them_out_mean_psycopg2(scheme: str) -> None:
    engine = make_engine(f"{scheme}://u:secret@db.example:5433/app")
    assert engine.url.drivername == "postgresql+psycopg2" and engine.url.password == "secret"
    engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
def test_postgres_scheme_connects_to_the_test_database(scheme: str) -> None:
    reason = postgres_reachable()
    if reason:
        pytest.skip(reason)
    from helpers import POSTGRES_URL
    from sqlalchemy import text

    url = scheme + POSTGRES_URL[POSTGRES_URL.index("://") :]
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("select current_database()")).scalar() == "test"
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("url", "words"),
    [("not a url", "DATABASE_URL is not a database URL"), ("mysql+nodriver://u:pw@h/db", "cannot use: mysql")],
)
def test_an_unusable_database_url_names_the_setting_and_hides_the_password(url: str, words: str) -> None:
    with pytest.raises(DatabaseNotReady) as info:
        make_engine(url)
    assert words in str(info.value) and "postgresql://USER:PASSWORD@HOST" in str(info.value)
    assert "pw" not in str(info.value)


def test_a_data_directory_that_cannot_be_made_names_the_setting(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    settings = CoreSettings(_env_file=None, data_dir=tmp_path / "file" / "data")
    with pytest.raises(DatabaseNotReady, match=r"Cannot create the data directory .*set KERNELCUP_DATA_DIR"):
        open_database(settings)
