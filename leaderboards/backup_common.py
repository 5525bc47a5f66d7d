"""What the backup formats share (``leaderboards.backup`` and ``leaderboards.portable``): the error, the progress
callback, and how a database is named, counted, checked for other users and for rows before a restore."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, MetaData, func, inspect, select, text
from sqlalchemy.engine import URL

from leaderboards.db import PRIVATE_FILE
from leaderboards.errors import KernelcupError, UserError

Progress = Callable[[str, int, int], None]
"""``progress(what, done, total)``: called as long work advances (pages, tables or rows; ``total`` 0 when unknown)."""


SERVICE_TABLES_SKIPPED = ("alembic_version",)
"""Not counted as content: a database the service migrated but never used is empty."""


class BackupError(KernelcupError):
    """A backup or restore that could not be done; the message names the problem and the fix."""

    code = "backup_failed"


def where(engine: Engine) -> str:
    """The database's URL without its password: the only form of it a message or a log line may carry."""
    return engine.url.render_as_string(hide_password=True)


def redact(message: str, url: URL) -> str:
    if url.password:
        message = message.replace(str(url.password), "***")
    return " ".join(message.split())


def no_progress(what: str, done: int, total: int) -> None:
    return None


def sqlite_path(engine: Engine) -> Path:
    name = engine.url.database
    if not name or name == ":memory:":
        raise BackupError("An in-memory SQLite database has nothing to back up or restore into; set DATABASE_URL")
    return Path(name).expanduser()


def sqlite_connect(path: Path, *, timeout: float = 30.0) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)  # transactions are begun here, explicitly
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    return conn


def revision_in(conn: Any) -> str | None:
    if "alembic_version" not in inspect(conn).get_table_names():
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def counts_in(conn: Any) -> dict[str, int]:
    meta = MetaData()
    meta.reflect(conn)
    return {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one() for t in meta.sorted_tables}


def known_revision(revision: str | None, path: Path) -> None:
    """Refuse a backup whose schema this kernelcup does not know (made by a newer one)."""
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    from leaderboards.db import alembic_config

    if revision is None:
        raise UserError(f"{path} is not a kernelcup backup (it has no migration record)")
    try:
        ScriptDirectory.from_config(alembic_config(None)).get_revision(revision)  # type: ignore[arg-type]
    except CommandError:
        raise UserError(
            f"{path} is at schema revision {revision}, which this kernelcup does not know (it was made by a newer "
            "one): upgrade kernelcup, then restore"
        ) from None


def in_use(target: str) -> BackupError:
    return BackupError(
        f"{target} is in use by another process (a worker, the bot, the web server or a shell): stop the service "
        "first, then restore"
    )


def sqlite_target(target: Path) -> None:
    """A missing SQLite database to restore into is made here, 0600 before SQLite writes to it."""
    if target.exists():
        return
    if not target.parent.is_dir():
        raise UserError(f"The folder {target.parent} does not exist; create it first (mkdir -p {target.parent})")
    os.close(os.open(target, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))


def not_empty(target: str, held: dict[str, int]) -> UserError:
    rows = ", ".join(f"{t}: {n}" for t, n in sorted(held.items()))
    return UserError(
        f"{target} is not empty ({rows}); restore into a new or empty database, or pass --force to replace "
        "everything in it with the backup"
    )


def pg_other_sessions(conn: Any) -> list[str]:
    rows = conn.execute(
        text(
            "SELECT coalesce(nullif(application_name, ''), 'unnamed') || ' from ' || "
            "coalesce(host(client_addr), 'local socket') FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
    ).scalars()
    return sorted(set(rows))
