"""Backups and restores (issue 37), on SQLite and on PostgreSQL: a backup taken while a writer keeps submitting
restores every row committed before it began; the restored database passes `db upgrade` and ranks as the original;
a restore refuses a database that holds rows (unless forced) or that another process has open; backups are 0600;
a failure leaves nothing behind; the database URL's password is never on a command line nor in a message."""

from __future__ import annotations

import gzip
import json
import secrets
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import POSTGRES_URL, future, make_problem, migrated_sqlite_template, postgres_reachable, run_result
from sqlalchemy import Engine, create_engine, select, text

from leaderboards import backup as backups
from leaderboards.backup import BackupError, backup, restore
from leaderboards.db import Database, current_revision, head_revision, make_engine, upgrade
from leaderboards.errors import UserError
from leaderboards.models import Base
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode, Verdict

CODE = b"def custom_kernel(data):\n    return data\n"


class Databases:
    """Fresh databases of one kind: ``new()`` gives the URL of one that does not exist yet (SQLite) or is empty
    (PostgreSQL: a new database, dropped at the end); ``migrated()`` one at the latest revision."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.made: list[str] = []
        self.engines: list[Engine] = []

    def new(self) -> str:
        if self.kind == "sqlite":
            path = self.tmp_path / f"db-{len(self.made)}.sqlite3"
            self.made.append(str(path))
            return f"sqlite:///{path}"
        name = f"kc_backup_{secrets.token_hex(5)}"
        admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        self.made.append(name)
        return make_engine(POSTGRES_URL).url.set(database=name).render_as_string(hide_password=False)

    def engine(self, url: str) -> Engine:
        engine = make_engine(url)
        self.engines.append(engine)
        return engine

    def migrated(self) -> Engine:
        engine = self.engine(self.new())
        upgrade(engine)
        return engine

    def drop(self) -> None:
        for engine in self.engines:
            engine.dispose()
        if self.kind == "postgres":
            admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                for name in self.made:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def dbs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Databases]:
    if request.param == "postgres":
        reason = postgres_reachable()
        if reason:
            pytest.skip(reason)
    made = Databases(request.param, tmp_path)
    yield made
    made.drop()


def service_on(engine: Engine, settings: CoreSettings) -> LeaderboardService:
    return LeaderboardService(Database(engine), settings)


def finish(service: LeaderboardService, user: str, medians: list[float], n: int = 0) -> int:
    """A ranked submission with its public and secret runs recorded, as a worker would."""
    receipt = service.submit(UserRef(user), "sub.py", CODE + f"# {user} {n}\n".encode(), "add", ["cpu"], Mode.RANKED)
    job = receipt.jobs[0].job_id
    service.record_run(job, run_result(medians))
    service.record_run(job, run_result(medians, verdict=Verdict.ACCEPTED), secret=True)
    return receipt.submission_id


def populate(service: LeaderboardService, tmp_path: Path, users: int = 6) -> None:
    service.create_leaderboard(make_problem(tmp_path), deadline=future(), devices=["cpu", "H100"])
    for i in range(users):
        finish(service, f"user{i}", [1000.0 + 37 * ((i * 5) % users), 2000.0 + i], i)
        finish(service, f"user{i}", [900.0 + 53 * i, 1800.0], users + i)
    service.submit(UserRef("queued"), "q.py", CODE + b"# queued\n", "add", ["H100"], Mode.BENCHMARK)


def content(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, in primary-key order, as the models read them (the same on both dialects)."""
    with engine.connect() as conn:
        rows = {
            t.name: [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]
            for t in Base.metadata.sorted_tables
        }
    rows["alembic_version"] = [(current_revision(engine),)]  # a connection of its own: SQLite has one writer
    return rows


def ranking(service: LeaderboardService) -> list[tuple[Any, ...]]:
    return [
        (e.rank, e.user_name, e.submission_id, e.score_ns, e.submitted_at)
        for device in ("cpu", "H100")
        for e in service.ranking("add", device, None).entries
    ]


def test_backup_while_a_writer_submits_restores_every_row_committed_before_it(
    dbs: Databases, settings: CoreSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = dbs.migrated()
    live = service_on(source, settings)
    populate(live, tmp_path)
    with source.connect() as conn:
        committed: list[int] = list(conn.execute(text("SELECT id FROM submissions")).scalars())
    started = len(committed)
    stop = threading.Event()
    failures: list[BaseException] = []

    def writer() -> None:
        i = 0
        try:
            while not stop.is_set():
                i += 1
                receipt = live.submit(UserRef(f"writer{i}"), "w.py", CODE + f"# w{i}\n".encode(), "add", ["cpu"])
                committed.append(receipt.submission_id)  # appended only once its transaction has committed
        except BaseException as exc:  # pragma: no cover - shown by the assertion below
            failures.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    while len(committed) < started + 20:
        time.sleep(0.01)
    before = set(committed)
    during: set[int] = set()

    def progress(what: str, done: int, total: int) -> None:
        # The first report comes after the snapshot was taken and copying began: the writer commits more rows while
        # the backup is under way (it is not blocked), and none of them may appear in the backup.
        if not during:
            n = len(committed)
            deadline = time.monotonic() + 20
            while len(committed) < n + 5 and time.monotonic() < deadline:
                time.sleep(0.01)
            during.update(committed[n:])

    monkeypatch.setattr(backups, "SQLITE_STEP_PAGES", 4)  # several steps, so that it reports between them
    try:
        made = backup(source, tmp_path / "live.backup", progress=progress)
    finally:
        time.sleep(0.2)  # the writer keeps going after the backup, too
        stop.set()
        thread.join()
    assert not failures
    after = set(committed)
    assert len(after) > len(before)

    target = dbs.engine(dbs.new())
    restored = restore(target, tmp_path / "live.backup")
    with target.connect() as conn:
        ids = set(conn.execute(text("SELECT id FROM submissions")).scalars())
    assert before <= ids, f"missing committed submissions: {sorted(before - ids)[:10]}"
    assert ids - before <= after  # nothing made up: only rows the writer committed while the backup ran
    assert len(during) >= 5 and not during & ids  # one snapshot: what was committed once copying began is not in it
    assert restored.tables == made.tables  # every table: the rows of the snapshot the backup reported
    assert restored.tables["submissions"] == len(ids)


def test_restored_database_passes_upgrade_ranks_alike_and_matches_table_by_table(
    dbs: Databases, settings: CoreSettings, tmp_path: Path
) -> None:
    source = dbs.migrated()
    original = service_on(source, settings)
    populate(original, tmp_path)
    made = backup(source, tmp_path / "kc.backup")
    assert made.revision == head_revision() and made.tables["submissions"] == 13

    target = dbs.engine(dbs.new())
    result = restore(target, tmp_path / "kc.backup")
    assert not result.replaced and not result.needs_upgrade and result.revision == head_revision()
    upgrade(target)  # what `kernelcup db upgrade` runs: nothing to do, no error
    assert current_revision(target) == head_revision()
    assert content(target) == content(source)
    copy = service_on(target, settings)
    assert ranking(copy) == ranking(original) and len(ranking(copy)) == 6
    # The restored database takes new work, and its ids continue after the restored ones.
    new_id = finish(copy, "newcomer", [10.0, 10.0], 99)
    assert new_id > max(r[0] for r in content(source)["submissions"])
    assert ranking(copy)[0][1] == "newcomer"


def test_a_backup_is_0600_and_never_replaces_a_file_unless_forced(dbs: Databases, tmp_path: Path) -> None:
    source = dbs.migrated()
    file = tmp_path / "kc.backup"
    backup(source, file)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    file.write_bytes(b"an older backup")
    with pytest.raises(UserError, match=r"already exists.*--force"):
        backup(source, file)
    assert file.read_bytes() == b"an older backup"
    backup(source, file, force=True)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600 and backups.detect_kind(file) != "portable"


def test_restore_refuses_a_database_with_rows_unless_forced(
    dbs: Databases, settings: CoreSettings, tmp_path: Path
) -> None:
    source = dbs.migrated()
    populate(service_on(source, settings), tmp_path)
    backup(source, tmp_path / "kc.backup")

    target = dbs.migrated()
    other = service_on(target, settings)
    other.create_leaderboard(make_problem(tmp_path / "other", "other"), deadline=future(), devices=["cpu"])
    before = content(target)
    with pytest.raises(UserError, match=r"not empty \(.*leaderboards: 1.*--force"):
        restore(target, tmp_path / "kc.backup")
    assert content(target) == before

    result = restore(target, tmp_path / "kc.backup", force=True)
    assert result.replaced
    assert content(target) == content(source)


def test_a_migrated_but_unused_database_counts_as_empty(dbs: Databases, settings: CoreSettings, tmp_path: Path) -> None:
    source = dbs.migrated()
    populate(service_on(source, settings), tmp_path, users=2)
    backup(source, tmp_path / "kc.backup")
    target = dbs.migrated()  # as the service leaves a database it started on and never used
    restore(target, tmp_path / "kc.backup")
    assert content(target) == content(source)


def test_a_failed_backup_leaves_the_older_file_and_no_partial_one(
    dbs: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = dbs.migrated()
    file = tmp_path / "kc.backup"
    file.write_bytes(b"yesterday's backup")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise BackupError("the disk filled up halfway")

    monkeypatch.setattr(backups, "_sqlite_backup" if dbs.kind == "sqlite" else "_pg_backup", broken)
    with pytest.raises(BackupError, match="halfway"):
        backup(source, file, force=True)
    assert file.read_bytes() == b"yesterday's backup"
    assert sorted(p.name for p in tmp_path.iterdir() if "kc.backup" in p.name) == ["kc.backup"]


def test_a_restore_is_refused_while_another_process_has_the_database_open(
    dbs: Databases, settings: CoreSettings, tmp_path: Path
) -> None:
    source = dbs.migrated()
    populate(service_on(source, settings), tmp_path, users=1)
    backup(source, tmp_path / "kc.backup")
    target_url = dbs.new()
    holder_code = (
        "import sys, time\n"
        "from leaderboards.db import make_engine, upgrade\n"
        "engine = make_engine(sys.argv[1]); upgrade(engine)\n"
        "with engine.connect() as conn:\n"
        "    conn.exec_driver_sql('SELECT 1')\n"
        "    print('open', flush=True); sys.stdin.readline()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", holder_code, target_url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "open"
        target = dbs.engine(target_url)
        with pytest.raises(BackupError, match="stop the service"):
            restore(target, tmp_path / "kc.backup")
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert content(target)["submissions"] == []
    restore(target, tmp_path / "kc.backup")  # the service stopped: now it goes through
    assert content(target) == content(source)


def test_a_native_backup_restores_only_into_its_own_kind_and_junk_is_named(dbs: Databases, tmp_path: Path) -> None:
    source = dbs.migrated()
    backup(source, tmp_path / "kc.backup")
    other = Databases("postgres" if dbs.kind == "sqlite" else "sqlite", tmp_path)
    if other.kind == "postgres" and postgres_reachable():
        pytest.skip("needs both databases")
    try:
        with pytest.raises(UserError, match=r"same kind of database.*--format portable"):
            restore(other.engine(other.new()), tmp_path / "kc.backup")
    finally:
        other.drop()
    junk = tmp_path / "notes.txt"
    junk.write_text("not a backup")
    with pytest.raises(UserError, match="not a kernelcup backup"):
        restore(dbs.engine(dbs.new()), junk)


# --- PostgreSQL's tools and the URL's password -----------------------------------------------------------------------


@pytest.mark.postgres
def test_the_password_travels_in_the_environment_never_on_a_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = postgres_reachable()
    if reason:
        pytest.skip(reason)
    dbs = Databases("postgres", tmp_path)
    try:
        password = "pw-" + secrets.token_hex(8)
        url = make_engine(dbs.new()).url.set(password=password)  # trust auth: accepted, and never needed
        engine = dbs.engine(url.render_as_string(hide_password=False))
        upgrade(engine)
        seen: list[tuple[list[str], dict[str, str]]] = []
        real = subprocess.Popen

        def spy(args: list[str], *rest: Any, **kwargs: Any) -> Any:
            seen.append((list(args), dict(kwargs.get("env") or {})))
            return real(args, *rest, **kwargs)

        monkeypatch.setattr(subprocess, "Popen", spy)
        backup(engine, tmp_path / "kc.backup")
        restore(dbs.engine(dbs.new()), tmp_path / "kc.backup")
        assert [Path(args[0]).name for args, _ in seen][:1] == ["pg_dump"]
        assert any(Path(args[0]).name == "pg_restore" and "--single-transaction" in args for args, _ in seen)
        for args, _env in seen:
            assert not any(password in a for a in args), args
        assert seen[0][1]["PGPASSWORD"] == password
        # A failure's message names the database without the password.
        gone = dbs.engine(url.set(database="kc_no_such_database").render_as_string(hide_password=False))
        with pytest.raises(Exception) as info:
            backup(gone, tmp_path / "gone.backup")
        assert password not in str(info.value) and "kc_no_such_database" in str(info.value)
    finally:
        dbs.drop()


def test_libpq_env_maps_the_url_and_refuses_what_the_tools_do_not_take() -> None:
    url = make_engine("postgresql://alice:s3cret@db.example:6543/kc?sslmode=require&options=-csearch_path%3Dkc").url
    env = backups.libpq_env(url)
    assert (env["PGHOST"], env["PGPORT"], env["PGUSER"], env["PGPASSWORD"], env["PGDATABASE"]) == (
        "db.example",
        "6543",
        "alice",
        "s3cret",
        "kc",
    )
    assert env["PGSSLMODE"] == "require" and env["PGOPTIONS"] == "-csearch_path=kc"
    with pytest.raises(BackupError, match="'pool_size'"):
        backups.libpq_env(make_engine("postgresql://u:p@h/kc?pool_size=3").url)


def test_a_missing_postgres_tool_is_named_with_how_to_get_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(backups.shutil, "which", lambda name: None)
    engine = make_engine("postgresql://u:p@127.0.0.1:1/kc")
    with pytest.raises(BackupError, match=r"pg_dump is not installed.*postgresql-client.*--format portable"):
        backup(engine, tmp_path / "kc.backup")
    assert not list(tmp_path.iterdir())
    (tmp_path / "x.dump").write_bytes(b"PGDMP and the rest")
    with pytest.raises(BackupError, match="pg_restore is not installed"):
        restore(engine, tmp_path / "x.dump")


# --- the portable format ---------------------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("direction", ["sqlite-to-postgres", "postgres-to-sqlite"])
def test_a_portable_backup_moves_a_board_between_sqlite_and_postgres(
    direction: str, settings: CoreSettings, tmp_path: Path
) -> None:
    reason = postgres_reachable()
    if reason:
        pytest.skip(reason)
    kinds = direction.split("-to-")
    old, new = Databases(kinds[0], tmp_path / "old"), Databases(kinds[1], tmp_path / "new")
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    try:
        source = old.migrated()
        original = service_on(source, settings)
        populate(original, tmp_path)
        made = backup(source, tmp_path / "kc.jsonl.gz", fmt="portable")
        assert made.kind == "portable" and made.tables["runs"] == 24
        assert stat.S_IMODE((tmp_path / "kc.jsonl.gz").stat().st_mode) == 0o600

        target = new.engine(new.new())
        result = restore(target, tmp_path / "kc.jsonl.gz")
        assert result.revision == head_revision()
        assert content(target) == content(source)
        copy = service_on(target, settings)
        assert ranking(copy) == ranking(original)
        assert finish(copy, "newcomer", [5.0, 5.0], 1) > max(r[0] for r in content(source)["submissions"])
    finally:
        old.drop()
        new.drop()


def _rewrite(path: Path, edit: Callable[[list[str]], list[str]]) -> None:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(edit(lines)) + "\n")


def test_a_portable_backup_of_another_revision_or_cut_short_restores_nothing(
    settings: CoreSettings, tmp_path: Path
) -> None:
    dbs = Databases("sqlite", tmp_path)
    source = dbs.migrated()
    populate(service_on(source, settings), tmp_path, users=2)
    file = tmp_path / "kc.jsonl.gz"

    def revision(rev: str) -> Callable[[list[str]], list[str]]:
        def edit(lines: list[str]) -> list[str]:
            header = json.loads(lines[0])
            return [json.dumps({**header, "revision": rev}), *lines[1:]]

        return edit

    target = dbs.engine(dbs.new())
    backup(source, file, fmt="portable")
    _rewrite(file, revision("0001"))
    with pytest.raises(UserError, match=r"revision 0001.*kernelcup db upgrade"):
        restore(target, file)
    backup(source, file, fmt="portable", force=True)
    _rewrite(file, revision("ffff9999"))
    with pytest.raises(UserError, match=r"does not know.*newer"):
        restore(target, file)
    backup(source, file, fmt="portable", force=True)
    _rewrite(file, lambda lines: lines[:-3])
    with pytest.raises(UserError, match="incomplete"):
        restore(target, file)
    assert content(target)["submissions"] == [] and content(target)["users"] == []


def test_a_backup_of_an_embedded_database_works_from_a_fresh_template(tmp_path: Path) -> None:
    """The file the service itself makes (WAL mode, pages still in the -wal file) backs up whole."""
    template = migrated_sqlite_template(tmp_path)
    engine = make_engine(f"sqlite:///{template}")
    with engine.begin() as conn:  # left in the -wal file: a `cp` of the main file alone would miss it
        conn.execute(text("INSERT INTO users (identity, name, is_banned, is_program) VALUES ('x:1', 'x', 0, 0)"))
    holder = engine.connect()
    try:
        made = backup(engine, tmp_path / "kc.backup")
    finally:
        holder.close()
    assert made.tables["users"] == 1
    engine.dispose()
