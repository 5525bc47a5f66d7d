"""Engine and sessions; schema migrations (Alembic, configured in code so it works from any directory).

``open_database(settings)`` is the one entry point: it builds the engine for ``DATABASE_URL`` (or the embedded
SQLite file in the data directory), migrates the embedded SQLite database on first use, and checks that a
PostgreSQL database is at the latest revision (``kernelcup db upgrade`` migrates it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, inspect, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, InterfaceError, NoSuchModuleError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from leaderboards.errors import DatabaseNotReady, DatabaseUnreachable
from leaderboards.models import utcnow
from leaderboards.settings import CoreSettings

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Foreign keys are off by default in SQLite (cascades need them); WAL lets readers run beside the one writer;
    # busy_timeout makes a second writer wait instead of failing at once. pysqlite's own BEGIN handling is turned
    # off so that ``_sqlite_begin`` decides how a transaction starts (and SAVEPOINT works).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_begin(conn: Any) -> None:
    # Every transaction takes the write lock up front: SQLite has one writer, and a deferred transaction that
    # reads and then writes fails with "database is locked" when another wrote in between, instead of waiting.
    # Correct rather than fast; PostgreSQL is the database for concurrency.
    conn.exec_driver_sql("BEGIN IMMEDIATE")


POSTGRES_SCHEMES = ("postgres", "postgresql")
"""Schemes hosts hand out for PostgreSQL (Heroku, Render, Fly, Supabase: ``postgres://``); both mean psycopg2."""


def database_url(url: str) -> URL:
    """``url`` parsed, with ``postgres://`` and ``postgresql://`` meaning the psycopg2 driver that kernelcup ships;
    a URL SQLAlchemy cannot use is a ``DatabaseNotReady`` naming DATABASE_URL and the forms it takes."""
    usage = "(use postgresql://USER:PASSWORD@HOST:PORT/DB, or leave DATABASE_URL unset for SQLite)"
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseNotReady(f"DATABASE_URL is not a database URL {usage}") from None
    if parsed.drivername in POSTGRES_SCHEMES:
        parsed = parsed.set(drivername="postgresql+psycopg2")
    try:
        parsed.get_dialect()
    except NoSuchModuleError:
        where = parsed.render_as_string(hide_password=True)
        raise DatabaseNotReady(f"DATABASE_URL names a database kernelcup cannot use: {where} {usage}") from None
    return parsed


def make_engine(url: str, *, echo: bool = False, **kwargs: Any) -> Engine:
    """An engine for ``url`` with the per-dialect settings the platform relies on. No I/O happens here.

    Bound parameters are hidden from every error and log line the engine writes (``hide_parameters``): they
    include the secret seed of a leaderboard and the code of submissions."""
    kwargs.setdefault("hide_parameters", True)
    parsed = database_url(url)
    if parsed.get_backend_name() == "sqlite":
        kwargs.setdefault("connect_args", {}).setdefault("timeout", 30)
        engine = create_engine(parsed, echo=echo, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(parsed, echo=echo, **kwargs)


def alembic_config(engine: Engine) -> Any:
    """An Alembic config for this engine; the migrations are found next to this package, not via the cwd."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    cfg = alembic_config(None)  # type: ignore[arg-type]
    head = ScriptDirectory.from_config(cfg).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def unreachable(engine: Engine, exc: Exception, *, doing: str = "reach") -> DatabaseUnreachable:
    """The error for a database that cannot be reached (or migrated), naming the URL (no password) and the setting."""
    reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
    where = engine.url.render_as_string(hide_password=True)
    return DatabaseUnreachable(f"Cannot {doing} the database at {where}: {reason} (check DATABASE_URL)")


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database cannot be reached right now (down, restarting, connection dropped, pool
    exhausted), as opposed to a bug: surfaces answer such a request with "try again" and recover on their own."""
    if isinstance(exc, DatabaseNotReady | OperationalError | InterfaceError | PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def database_now(session: Session) -> datetime:
    """The database server's clock (aware UTC), read in ``session``'s transaction.

    Leases are compared by many processes on many hosts; each one's wall clock may be off (an NTP step, a resumed
    VM), so the one clock they all agree on is the database's. On PostgreSQL it is ``CURRENT_TIMESTAMP``: the start of
    the transaction, one value however often it is read in it. On SQLite it is the host's clock as SQLite reads it
    (milliseconds), the one clock of every process sharing the file; read the same way so there is one code path."""
    if session.get_bind().dialect.name == "sqlite":
        stamp = session.scalar(text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')"))
        return datetime.fromisoformat(str(stamp)).replace(tzinfo=UTC)
    value = session.scalar(select(func.current_timestamp()))
    if not isinstance(value, datetime):
        raise TypeError(f"the database's CURRENT_TIMESTAMP is not a timestamp: {value!r}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def lease_now(session: Session, clock: Callable[[], datetime]) -> datetime:
    """The time a lease is written and compared by: the database's (``database_now``) when ``clock`` is this
    process's wall clock (``leaderboards.models.utcnow``, every service's default), else ``clock`` (a test's
    simulated time stands in for the database's)."""
    return database_now(session) if clock is utcnow else clock()


class Database:
    """The engine and a session factory. Build with ``open_database``; sessions expire nothing on commit."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessionmaker = sessionmaker(engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    def session(self) -> Session:
        return self.sessionmaker()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session in one transaction: committed on success, rolled back on any exception."""
        with self.sessionmaker.begin() as session:
            yield session

    def ensure_schema(self, *, migrate: bool | None = None) -> None:
        """Bring the schema to the latest revision (SQLite by default) or check that it is there.

        ``migrate=None`` migrates SQLite automatically and only checks other databases, whose migration is an
        operator's step (``kernelcup db upgrade``).
        """
        migrate = self.is_sqlite if migrate is None else migrate
        try:
            current = current_revision(self.engine)
        except OperationalError as exc:
            raise unreachable(self.engine, exc) from None
        head = head_revision()
        if current == head:
            return
        if migrate:
            upgrade(self.engine)
            return
        state = "has no kernelcup tables" if current is None else f"is at revision {current}, not {head}"
        if current is None and inspect(self.engine).get_table_names():
            state = "has tables but no migration record"
        raise DatabaseNotReady(f"The database {state}. Run `kernelcup db upgrade` to migrate it.")

    def dispose(self) -> None:
        self.engine.dispose()


PRIVATE_FILE = 0o600
"""The embedded database's mode: readable by its owner only (it holds every board's secret seed and all code)."""


def prepare_embedded(settings: CoreSettings) -> None:
    """Without ``DATABASE_URL``: the data dir (0700 when made here) and the SQLite file in it, made 0600 before
    SQLite would make it 0644 (its ``-wal`` and ``-shm`` files take the database file's mode); an existing one
    readable by others is narrowed to 0600."""
    if settings.database_url is not None:
        return
    try:
        data_dir = settings.ensure_data_dir()
    except OSError as exc:
        raise DatabaseNotReady(
            f"Cannot create the data directory {settings.resolved_data_dir()} ({exc.strerror or exc}); set "
            "KERNELCUP_DATA_DIR to a folder this user can write, or DATABASE_URL"
        ) from None
    path = settings.embedded_database_path()
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE))
        for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if file.exists() and file.stat().st_mode & 0o077:
                file.chmod(PRIVATE_FILE)
    except OSError as exc:
        raise DatabaseNotReady(
            f"Cannot create the database file {path} ({exc.strerror or exc}); make {data_dir} writable by this user "
            "(or set KERNELCUP_DATA_DIR to a folder that is), or set DATABASE_URL"
        ) from None


def open_database(settings: CoreSettings, *, migrate: bool | None = None) -> Database:
    """Build the engine from settings and make sure the schema is current (see ``Database.ensure_schema``)."""
    url = settings.resolved_database_url()
    prepare_embedded(settings)
    db = Database(make_engine(url, echo=settings.db_echo))
    db.ensure_schema(migrate=migrate)
    return db
