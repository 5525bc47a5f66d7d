"""Backups of the database, taken while the service runs, and their restore.

``backup(engine, path)`` writes one file; ``restore(engine, path)`` puts it back. Three kinds of file:

- **SQLite** (``native`` from an SQLite database): a copy made with SQLite's online backup API, page by page inside
  one read transaction, so it is the database as it was at one instant while the service keeps writing (a ``cp``
  of the live file misses what is still in the ``-wal`` file, or copies a torn page);
- **PostgreSQL** (``native`` from PostgreSQL): a ``pg_dump`` custom-format archive of one exported snapshot, restored
  with ``pg_restore`` in one transaction; the password travels in the tools' environment, never on their command line;
- **portable**: every table's rows as gzip'd JSON lines with the schema's Alembic revision, read from one snapshot:
  restores into either database (this is how a board moves from SQLite to PostgreSQL or back).

Every file is written under a temporary name in the target folder, made 0600 before anything is written to it (a
backup holds every board's secret seed and all submitted code), and renamed into place only when complete and
checked: a failure leaves no partial file. A restore refuses a database that holds rows unless ``force`` is given,
and refuses while another connection has the database open (the service must be stopped). It restores everything
or nothing.

The portable format is in ``leaderboards.portable``; what both share in ``leaderboards.backup_common``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, text
from sqlalchemy.engine import URL

from leaderboards.backup_common import (
    SERVICE_TABLES_SKIPPED,
    BackupError,
    Progress,
    counts_in,
    in_use,
    known_revision,
    no_progress,
    not_empty,
    pg_other_sessions,
    redact,
    revision_in,
    sqlite_connect,
    sqlite_path,
    sqlite_target,
    where,
)
from leaderboards.db import PRIVATE_FILE, head_revision
from leaderboards.errors import UserError
from leaderboards.portable import portable_backup, portable_restore

FORMATS = ("native", "portable")
SQLITE_MAGIC = b"SQLite format 3\x00"
PGDUMP_MAGIC = b"PGDMP"
GZIP_MAGIC = b"\x1f\x8b"
SQLITE_STEP_PAGES = 1024
"""Pages per step of SQLite's backup (4 MiB at the default page size): one progress report per step."""

LIBPQ_ENV = {
    "host": "PGHOST",
    "hostaddr": "PGHOSTADDR",
    "port": "PGPORT",
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "sslcrl": "PGSSLCRL",
    "sslpassword": "PGSSLPASSWORD",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "application_name": "PGAPPNAME",
    "options": "PGOPTIONS",
    "target_session_attrs": "PGTARGETSESSIONATTRS",
    "passfile": "PGPASSFILE",
    "service": "PGSERVICE",
    "gssencmode": "PGGSSENCMODE",
    "channel_binding": "PGCHANNELBINDING",
}
"""libpq connection parameters a DATABASE_URL's query may carry, and the environment variable that passes each."""


@dataclass(frozen=True)
class BackupResult:
    path: Path
    kind: str
    """``sqlite``, ``postgresql`` or ``portable``: what ``restore`` will find in the file."""
    revision: str | None
    tables: dict[str, int] = field(default_factory=dict)
    """Rows per table in the snapshot the file holds."""
    size: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class RestoreResult:
    path: Path
    kind: str
    revision: str | None
    head: str
    tables: dict[str, int] = field(default_factory=dict)
    """Rows per table of the database after the restore."""
    replaced: bool = False
    """Whether rows that were there before were replaced (``force``)."""
    seconds: float = 0.0

    @property
    def needs_upgrade(self) -> bool:
        return self.revision != self.head


# --- files ---------------------------------------------------------------------------------------------------------


@contextmanager
def staged_file(target: Path, *, force: bool = False) -> Iterator[Path]:
    """A new empty 0600 file beside ``target``, renamed onto it when the block ends without an error, removed
    otherwise (with any ``-journal``/``-wal``/``-shm`` SQLite left beside it). ``target`` must not exist unless
    ``force``."""
    target = target.expanduser()
    if target.is_dir():
        raise UserError(f"{target} is a folder; give the backup file's name, e.g. {target / 'kernelcup.backup'}")
    if target.exists() and not force:
        raise UserError(f"{target} already exists; choose another name, or pass --force to replace it")
    folder = target.parent
    if not folder.is_dir():
        raise UserError(f"The folder {folder} does not exist; create it first (mkdir -p {folder})")
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=folder)  # mkstemp: 0600
    except OSError as exc:
        raise UserError(
            f"Cannot write in {folder} ({exc.strerror or exc}); choose a folder this user can write"
        ) from None
    os.close(fd)
    staged = Path(name)
    try:
        yield staged
        os.chmod(staged, PRIVATE_FILE)
        with open(staged, "rb") as f:
            os.fsync(f.fileno())
        os.replace(staged, target)
        _fsync_dir(folder)
    finally:
        for leftover in (staged, *(staged.with_name(staged.name + s) for s in ("-journal", "-wal", "-shm"))):
            with suppress(FileNotFoundError):
                leftover.unlink()


def _fsync_dir(folder: Path) -> None:
    with suppress(OSError):  # not every filesystem lets a folder be opened and synced
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def detect_kind(path: Path) -> str:
    """``sqlite``, ``postgresql`` or ``portable``, from the file's first bytes; a ``UserError`` for anything else."""
    path = path.expanduser()
    if not path.is_file():
        raise UserError(f"No backup file at {path}")
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(PGDUMP_MAGIC):
        return "postgresql"
    if head.startswith(GZIP_MAGIC):
        return "portable"
    raise UserError(
        f"{path} is not a kernelcup backup (neither an SQLite database, a pg_dump custom-format archive nor a "
        "portable export); make one with `kernelcup db backup FILE`"
    )


# --- backup --------------------------------------------------------------------------------------------------------


def backup(
    engine: Engine, path: Path, *, fmt: str = "native", force: bool = False, progress: Progress = no_progress
) -> BackupResult:
    """A consistent copy of the database behind ``engine`` in ``path`` (0600), taken while the service writes."""
    if fmt not in FORMATS:
        raise UserError(f"Unknown backup format {fmt!r}; use one of: {', '.join(FORMATS)}")
    started = time.monotonic()
    backend = engine.url.get_backend_name()
    with staged_file(path, force=force) as staged:
        if fmt == "portable":
            kind, revision, tables = "portable", *portable_backup(engine, staged, progress)
        elif backend == "sqlite":
            kind, revision, tables = "sqlite", *_sqlite_backup(sqlite_path(engine), staged, progress)
        elif backend == "postgresql":
            kind, revision, tables = "postgresql", *_pg_backup(engine, staged, progress)
        else:
            raise BackupError(f"Backups of {backend} databases are not supported; use --format portable")
        size = staged.stat().st_size
    return BackupResult(path.expanduser(), kind, revision, tables, size, time.monotonic() - started)


def _sqlite_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    )
    return [r[0] for r in rows]


def _sqlite_counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in _sqlite_tables(conn)}


def _sqlite_revision(conn: sqlite3.Connection) -> str | None:
    if "alembic_version" not in _sqlite_tables(conn):
        return None
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return row[0] if row else None


def _sqlite_backup(source: Path, staged: Path, progress: Progress) -> tuple[str | None, dict[str, int]]:
    if not source.is_file():
        raise BackupError(f"No database at {source}: nothing to back up (is KERNELCUP_DATA_DIR or DATABASE_URL right?)")
    src = sqlite_connect(source)
    dst = sqlite3.connect(staged, isolation_level=None)
    try:
        # One read transaction held across every step: each step copies pages of the same snapshot (WAL lets the
        # service keep writing meanwhile). Without it, a write between two steps restarts the copy from the start,
        # and a busy service could keep it from ever finishing.
        src.execute("BEGIN")
        revision = _sqlite_revision(src)
        if revision is None:
            raise BackupError(f"{source} is not a kernelcup database (it has no migration record)")
        counts = _sqlite_counts(src)

        def step(_status: int, remaining: int, total: int) -> None:
            progress("copying pages", total - remaining, total)

        src.backup(dst, pages=SQLITE_STEP_PAGES, progress=step)
        src.execute("COMMIT")
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file; the service turns WAL back on
        _sqlite_check(dst, staged)
        copied = _sqlite_counts(dst)
        if copied != counts:
            raise BackupError(f"The copy's row counts {copied} differ from the snapshot's {counts}; nothing was kept")
        return revision, counts
    except sqlite3.Error as exc:
        raise BackupError(f"Backing up {source} failed: {exc}") from None
    finally:
        dst.close()
        src.close()


def _sqlite_check(conn: sqlite3.Connection, path: Path) -> None:
    verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
    if verdict != "ok":
        raise BackupError(f"{path} failed SQLite's integrity check: {verdict}")


def _pg_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} is not installed or not on PATH: install the PostgreSQL client tools of the server's major "
            "version or newer (Debian/Ubuntu: apt install postgresql-client), or use --format portable"
        )
    return found


def libpq_env(url: URL) -> dict[str, str]:
    """The environment that points libpq's tools at ``url``: the password goes in PGPASSWORD, where another user's
    ``ps`` cannot read it (a command line is public to every local user; a process's environment is not)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    keep = ("PGPASSFILE", "PGSERVICEFILE", "PGSYSCONFDIR", "PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY")
    env.update({k: os.environ[k] for k in keep if k in os.environ})  # the operator's own libpq files and TLS setup
    for key, value in url.query.items():
        var = LIBPQ_ENV.get(key)
        if var is None:
            raise BackupError(
                f"DATABASE_URL has a query parameter {key!r} that the PostgreSQL tools do not take; remove it "
                f"(they take: {', '.join(sorted(LIBPQ_ENV))})"
            )
        env[var] = value if isinstance(value, str) else value[-1]
    if url.host:
        env["PGHOST"] = url.host
    if url.port:
        env["PGPORT"] = str(url.port)
    if url.username:
        env["PGUSER"] = url.username
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    if url.database:
        env["PGDATABASE"] = url.database
    return env


def _run_pg_tool(args: list[str], url: URL, progress: Progress, doing: str) -> None:
    """Run a PostgreSQL tool (``--verbose``) with the URL in its environment, passing its lines on as progress."""
    proc = subprocess.Popen(
        args, env=libpq_env(url), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    errors: list[str] = []
    done = 0
    for line in proc.stderr:
        line = redact(line, url)
        if ": error:" in line or "FATAL" in line or ": fatal:" in line:
            errors.append(line)
        elif "table" in line:
            done += 1
            progress(line.split(": ", 1)[-1][:100], done, 0)
    if proc.wait() != 0:
        reason = "; ".join(errors[-3:]) or f"{Path(args[0]).name} exited with status {proc.returncode}"
        raise BackupError(f"{doing} failed: {reason}")


def _pg_backup(engine: Engine, staged: Path, progress: Progress) -> tuple[str | None, dict[str, int]]:
    pg_dump = _pg_tool("pg_dump")
    # The rows are counted in a transaction whose snapshot pg_dump then uses (--snapshot): the counts reported are
    # exactly what the archive holds, while the service keeps writing.
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
            revision = revision_in(conn)
            if revision is None:
                raise BackupError(f"{where(engine)} has no kernelcup tables: nothing to back up")
            counts = counts_in(conn)
            args = [pg_dump, "--format=custom", "--verbose", f"--snapshot={snapshot}", f"--file={staged}"]
            _run_pg_tool(args, engine.url, progress, f"pg_dump of {where(engine)}")
    _pg_list(staged, progress)
    return revision, counts


def _pg_list(archive: Path, progress: Progress) -> None:
    """Check that ``archive`` reads back as a pg_dump archive (its table of contents)."""
    proc = subprocess.run(
        [_pg_tool("pg_restore"), "--list", str(archive)], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if proc.returncode != 0:
        raise BackupError(f"The archive pg_dump wrote does not read back: {' '.join(proc.stderr.split())[:300]}")
    progress("checked", 1, 1)


# --- restore -------------------------------------------------------------------------------------------------------


def restore(engine: Engine, path: Path, *, force: bool = False, progress: Progress = no_progress) -> RestoreResult:
    """Put the backup in ``path`` into the database behind ``engine``: refused while another connection uses it (stop
    the service first) and, unless ``force``, when it holds any row. All of it or, on failure, nothing."""
    path = path.expanduser()
    kind = detect_kind(path)
    backend = engine.url.get_backend_name()
    started = time.monotonic()
    engine.dispose()  # the pool's idle connections are this process's own, not the service's
    if kind == "portable":
        replaced = portable_restore(engine, path, force, progress)
    elif kind == "sqlite" and backend == "sqlite":
        replaced = _sqlite_restore(path, sqlite_path(engine), force, progress)
    elif kind == "postgresql" and backend == "postgresql":
        replaced = _pg_restore(engine, path, force, progress)
    else:
        raise UserError(
            f"{path} is a native {kind} backup and the configured database ({where(engine)}) is {backend}: a native "
            "backup restores into the same kind of database. To move between them, take a portable one from the "
            "old database (`kernelcup db backup FILE --format portable`) and restore that."
        )
    with engine.connect() as conn:
        revision = revision_in(conn)
        counts = counts_in(conn)
    engine.dispose()
    return RestoreResult(path, kind, revision, head_revision(), counts, replaced, time.monotonic() - started)


def _sqlite_restore(source: Path, target: Path, force: bool, progress: Progress) -> bool:
    src = sqlite_connect(source, timeout=5)
    try:
        _sqlite_check(src, source)
        known_revision(_sqlite_revision(src), source)
    except sqlite3.Error as exc:
        raise UserError(f"{source} cannot be read as an SQLite backup: {exc}") from None
    try:
        sqlite_target(target)
    except UserError:
        src.close()
        raise
    dst = sqlite_connect(target, timeout=2)
    try:
        # How "the service is stopped" is checked: an exclusive lock on the database, which SQLite (in WAL mode)
        # grants only when no other connection of any process has the file open. It is held until the end, so no
        # service can start and write halfway through.
        dst.execute("PRAGMA locking_mode=EXCLUSIVE")
        try:
            dst.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise in_use(str(target)) from None
            raise
        held = {t: n for t, n in _sqlite_counts(dst).items() if n and t not in SERVICE_TABLES_SKIPPED}
        dst.execute("COMMIT")  # the exclusive lock stays (locking_mode); the backup API needs no open transaction
        if held and not force:
            raise not_empty(str(target), held)

        def step(_status: int, remaining: int, total: int) -> None:
            progress("restoring pages", total - remaining, total)

        # The backup API writes the destination in one transaction: a failure halfway leaves it as it was.
        src.backup(dst, pages=SQLITE_STEP_PAGES, progress=step)
        _sqlite_check(dst, target)
        return bool(held)
    except sqlite3.Error as exc:
        raise BackupError(f"Restoring {source} into {target} failed, and it was left as it was: {exc}") from None
    finally:
        dst.close()
        src.close()
        for file in (target, target.with_name(target.name + "-wal"), target.with_name(target.name + "-shm")):
            with suppress(OSError):
                if file.exists() and file.stat().st_mode & 0o077:
                    file.chmod(PRIVATE_FILE)


def _pg_restore(engine: Engine, archive: Path, force: bool, progress: Progress) -> bool:
    pg_restore = _pg_tool("pg_restore")
    _pg_list(archive, no_progress)
    engine.dispose()  # the pool's idle connections are ours, not the service's
    with engine.connect() as conn:
        others = pg_other_sessions(conn)
        if others:
            raise BackupError(
                f"{where(engine)} has {len(others)} other connection(s) ({', '.join(others)[:300]}): stop the service "
                "(workers, the bot, the web server) first, then restore"
            )
        held = {t: n for t, n in counts_in(conn).items() if n and t not in SERVICE_TABLES_SKIPPED}
    engine.dispose()
    if held and not force:
        raise not_empty(where(engine), held)
    # --clean --if-exists drops what the archive recreates (a migrated, empty database has those tables);
    # --single-transaction makes it all or nothing; --no-owner/--no-acl: the target's user owns what it restores.
    args = [
        pg_restore,
        "--verbose",
        "--clean",
        "--if-exists",
        "--single-transaction",
        "--exit-on-error",
        "--no-owner",
        "--no-acl",
        f"--dbname={engine.url.database}",
        str(archive),
    ]
    _run_pg_tool(args, engine.url, progress, f"pg_restore into {where(engine)} (nothing was changed)")
    return bool(held)


# --- the portable format -------------------------------------------------------------------------------------------
