"""The portable backup format: every table's rows as gzip'd JSON lines, read in one snapshot, with the schema's
Alembic revision in its first line and the row count in its last. It restores into SQLite or PostgreSQL alike, which
is how a board moves from one to the other (``kernelcup db backup FILE --format portable``)."""

from __future__ import annotations

import base64
import gzip
import json
import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Engine, LargeBinary, Table, func, select, text

from leaderboards.backup_common import (
    SERVICE_TABLES_SKIPPED,
    BackupError,
    Progress,
    counts_in,
    in_use,
    known_revision,
    not_empty,
    pg_other_sessions,
    revision_in,
    sqlite_connect,
    sqlite_path,
    sqlite_target,
    where,
)
from leaderboards.db import head_revision, upgrade
from leaderboards.errors import UserError
from leaderboards.models import Base, UTCDateTime

PORTABLE_FORMAT = "kernelcup-portable"


PORTABLE_VERSION = 1


PORTABLE_BATCH = 500


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _decoder(table: Table) -> Callable[[dict[str, Any]], dict[str, Any]]:
    binary = {c.name for c in table.columns if isinstance(c.type, LargeBinary)}
    stamps = {c.name for c in table.columns if isinstance(c.type, UTCDateTime)}

    def decode(row: dict[str, Any]) -> dict[str, Any]:
        for name in binary:
            if row.get(name) is not None:
                row[name] = base64.b64decode(row[name]["$b64"])
        for name in stamps:
            if row.get(name) is not None:
                row[name] = datetime.fromisoformat(row[name])
        return row

    return decode


def portable_backup(engine: Engine, staged: Path, progress: Progress) -> tuple[str | None, dict[str, int]]:
    head = head_revision()
    tables = Base.metadata.sorted_tables
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():  # one snapshot (SQLite: one read transaction; PostgreSQL: repeatable read)
            revision = revision_in(conn)
            if revision != head:
                raise BackupError(
                    f"{where(engine)} is at revision {revision or 'none'}, not the latest ({head}); a portable backup "
                    "is taken of a current schema: run `kernelcup db upgrade` first"
                )
            counts = {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one() for t in tables}
            total = sum(counts.values())
            done = 0
            with gzip.open(staged, "wt", encoding="utf-8", compresslevel=5) as out:
                _write_line(
                    out,
                    {
                        "format": PORTABLE_FORMAT,
                        "version": PORTABLE_VERSION,
                        "revision": revision,
                        "dialect": engine.dialect.name,
                        "tables": counts,
                    },
                )
                for table in tables:
                    order = list(table.primary_key.columns)
                    for row in conn.execute(select(table).order_by(*order)).mappings():
                        _write_line(out, {"t": table.name, "r": {k: _encode(v) for k, v in row.items()}})
                        done += 1
                        if done % PORTABLE_BATCH == 0:
                            progress("rows", done, total)
                _write_line(out, {"end": True, "rows": done})
            progress("rows", done, total)
    return revision, counts


def _write_line(out: IO[str], obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    out.write("\n")


def _portable_header(path: Path) -> dict[str, Any]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            header = json.loads(f.readline())
    except (OSError, ValueError, EOFError):
        header = None
    if not isinstance(header, dict) or header.get("format") != PORTABLE_FORMAT:
        raise UserError(f"{path} is a gzip file but not a kernelcup portable backup")
    if header.get("version") != PORTABLE_VERSION:
        raise UserError(f"{path} is a portable backup of version {header.get('version')}; this kernelcup reads 1")
    return header


def portable_restore(engine: Engine, path: Path, force: bool, progress: Progress) -> bool:
    header = _portable_header(path)
    head = head_revision()
    revision = header.get("revision")
    known_revision(revision, path)
    if revision != head:
        raise UserError(
            f"{path} holds schema revision {revision}, and this kernelcup restores portable backups of revision "
            f"{head} only: restore it with the kernelcup that made it (or a native backup), run `kernelcup db "
            "upgrade`, and take a new portable backup"
        )
    if engine.dialect.name == "sqlite":
        sqlite_target(sqlite_path(engine))
    engine.dispose()
    _portable_check_alone(engine)
    with engine.connect() as conn:
        current = revision_in(conn)
        held = {t: n for t, n in counts_in(conn).items() if n and t not in SERVICE_TABLES_SKIPPED} if current else {}
    if held and not force:
        raise not_empty(where(engine), held)
    if current != head:
        if current is not None and not force:
            raise UserError(
                f"{where(engine)} is at revision {current}, not {head}: run `kernelcup db upgrade` first (or pass "
                "--force)"
            )
        upgrade(engine)
    tables = {t.name: t for t in Base.metadata.sorted_tables}
    expected: dict[str, int] = header.get("tables", {})
    total = sum(expected.values())
    seen: dict[str, int] = dict.fromkeys(expected, 0)
    done = 0
    ended = False
    with engine.begin() as conn:  # all of it, or nothing
        for table in reversed(Base.metadata.sorted_tables):
            conn.execute(table.delete())
        batch: list[dict[str, Any]] = []
        batch_table: Table | None = None
        decode: Callable[[dict[str, Any]], dict[str, Any]] = dict

        def flush() -> None:
            if batch_table is not None and batch:
                conn.execute(batch_table.insert(), batch)
                batch.clear()

        with gzip.open(path, "rt", encoding="utf-8") as f:
            f.readline()
            for line in f:
                item = json.loads(line)
                if item.get("end"):
                    ended = True
                    break
                table = tables.get(item["t"])
                if table is None:
                    raise UserError(f"{path} has rows of an unknown table {item['t']!r}; nothing was restored")
                if table is not batch_table:
                    flush()
                    batch_table, decode = table, _decoder(table)
                batch.append(decode(item["r"]))
                seen[table.name] = seen.get(table.name, 0) + 1
                done += 1
                if len(batch) >= PORTABLE_BATCH:
                    flush()
                    progress("rows", done, total)
            flush()
        if not ended or seen != expected:
            raise UserError(
                f"{path} is incomplete (rows {seen}, its header promised {expected}): it was cut short; nothing was "
                "restored"
            )
        if engine.dialect.name == "postgresql":
            _pg_reset_sequences(conn)
    progress("rows", done, total)
    return bool(held)


def _portable_check_alone(engine: Engine) -> None:
    """Refuse while another connection uses the database (checked as the native restores check it)."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            others = pg_other_sessions(conn)
        engine.dispose()
        if others:
            raise BackupError(
                f"{where(engine)} has {len(others)} other connection(s) ({', '.join(others)[:300]}): stop the service "
                "first, then restore"
            )
        return
    probe = sqlite_connect(sqlite_path(engine), timeout=2)
    try:
        probe.execute("PRAGMA locking_mode=EXCLUSIVE")
        probe.execute("BEGIN EXCLUSIVE")
        probe.execute("ROLLBACK")
    except sqlite3.OperationalError:
        raise in_use(str(sqlite_path(engine))) from None
    finally:
        probe.close()


def _pg_reset_sequences(conn: Any) -> None:
    """Restored ids came from the export; each id sequence continues after the largest one."""
    for table in Base.metadata.sorted_tables:
        for column in table.primary_key.columns:
            if column.autoincrement is True or (column.autoincrement == "auto" and column.type.python_type is int):
                seq = conn.execute(text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": column.name})
                name = seq.scalar()
                if name:
                    largest = f'SELECT coalesce(max("{column.name}"), 0) + 1 FROM "{table.name}"'
                    conn.execute(text(f"SELECT setval(:s, ({largest}), false)"), {"s": name})
