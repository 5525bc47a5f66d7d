"""`kernelcup db`: migrate the database, show where it is, back it up and restore it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from kernelcup.commands.common import core_settings, jsonable, print_json, user_errors


def register(app: typer.Typer) -> None:
    db_app = typer.Typer(help="The database: migrations, status, backup and restore.", no_args_is_help=True)
    app.add_typer(db_app, name="db")

    @db_app.command("upgrade")
    def upgrade_cmd(
        revision: str = typer.Argument("head", help="Target revision (default: the latest)."),
    ) -> None:
        """Migrate the database (DATABASE_URL, or the embedded SQLite file) to the latest schema."""
        from leaderboards.db import Database, current_revision, make_engine, prepare_embedded, unreachable, upgrade

        with user_errors():
            settings = core_settings()
            prepare_embedded(settings)
            db = Database(make_engine(settings.resolved_database_url()))
            try:
                before = current_revision(db.engine)
                upgrade(db.engine, revision)
                after = current_revision(db.engine)
            except Exception as exc:  # connection or migration failure: name the database
                raise unreachable(db.engine, exc, doing="migrate") from None
            finally:
                db.dispose()
            url = db.engine.url.render_as_string(hide_password=True)
            if before == after:
                typer.echo(f"{url}: already at revision {after}")
            else:
                typer.echo(f"{url}: migrated from {before or 'empty'} to {after}")

    @db_app.command("status")
    def status_cmd(json_out: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
        """Show the database URL, its schema revision and the latest one."""
        from leaderboards.db import Database, current_revision, head_revision, make_engine, unreachable

        with user_errors():
            settings = core_settings()
            url = settings.resolved_database_url()
            db = Database(make_engine(url))
            file = db.engine.url.database if db.engine.url.get_backend_name() == "sqlite" else None
            try:
                # An SQLite file not made yet (a fresh data folder) has no revision: a status query creates nothing.
                missing = bool(file) and file != ":memory:" and not Path(file).exists()  # type: ignore[arg-type]
                current = None if missing else current_revision(db.engine)
            except Exception as exc:
                raise unreachable(db.engine, exc) from None
            finally:
                db.dispose()
            head = head_revision()
            info = {
                "url": db.engine.url.render_as_string(hide_password=True),
                "revision": current,
                "latest": head,
                "up_to_date": current == head,
            }
            if json_out:
                print_json(info)
                return
            state = "up to date" if current == head else "behind: run `kernelcup db upgrade`"
            typer.echo(f"{info['url']}\nrevision {current or 'none'} (latest {head}): {state}")

    @db_app.command(
        "backup",
        help="Back up the database (DATABASE_URL, or the embedded SQLite file) while the service runs.\n\n"
        "One consistent snapshot: every submission committed before it began, nothing half-written. Written under "
        "a temporary name, checked, then renamed to FILE; restore it with `kernelcup db restore FILE`.",
    )
    def backup_cmd(
        file: Path = typer.Argument(..., help="The backup file to write (made 0600; it holds every secret seed)."),
        fmt: str = typer.Option(
            "native",
            "--format",
            help="native: SQLite's online backup API, or pg_dump's custom format for PostgreSQL; portable: JSON "
            "lines that restore into either database (to move between SQLite and PostgreSQL).",
        ),
        force: bool = typer.Option(False, "--force", help="Replace FILE if it exists."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        from leaderboards.backup import backup
        from leaderboards.db import make_engine

        with user_errors():
            settings = core_settings()
            engine = make_engine(settings.resolved_database_url())
            try:
                with _progress(quiet=json_out) as progress:
                    result = backup(engine, file, fmt=fmt, force=force, progress=progress)
            finally:
                engine.dispose()
            if json_out:
                print_json(result)
                return
            tables = {t: n for t, n in result.tables.items() if t != "alembic_version"}
            typer.echo(
                f"{result.path}: {result.kind} backup of revision {result.revision}, {sum(tables.values())} rows in "
                f"{len(tables)} tables ({tables.get('submissions', 0)} submissions), "
                f"{result.size / 1e6:.1f} MB in {result.seconds:.1f} s"
            )

    @db_app.command(
        "restore",
        help="Restore a backup into the database (DATABASE_URL, or the embedded SQLite file). Stop the service "
        "first.\n\nRefused while another process has the database open, and (without --force) when it holds any "
        "row. A native backup goes into the same kind of database; a portable one into either. All of it, or nothing.",
    )
    def restore_cmd(
        file: Path = typer.Argument(..., help="A file made by `kernelcup db backup`."),
        force: bool = typer.Option(False, "--force", help="Replace everything in a database that already holds rows."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        from leaderboards.backup import restore
        from leaderboards.db import make_engine, prepare_embedded

        with user_errors():
            settings = core_settings()
            prepare_embedded(settings)
            engine = make_engine(settings.resolved_database_url())
            try:
                with _progress(quiet=json_out) as progress:
                    result = restore(engine, file, force=force, progress=progress)
            finally:
                engine.dispose()
            if json_out:
                print_json({**jsonable(result), "needs_upgrade": result.needs_upgrade})
                return
            rows = sum(n for t, n in result.tables.items() if t != "alembic_version")
            typer.echo(
                f"{engine.url.render_as_string(hide_password=True)}: restored {result.path} ({result.kind}), "
                f"{rows} rows ({result.tables.get('submissions', 0)} submissions) in {result.seconds:.1f} s"
            )
            if result.needs_upgrade:
                typer.echo(f"revision {result.revision}, latest {result.head}: run `kernelcup db upgrade`")


@contextmanager
def _progress(*, quiet: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A progress line on stderr (Rich) for long backups and restores; nothing with --json or off a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        yield lambda what, done, total: None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), console=console) as bar:
        task = bar.add_task("backup", total=None)

        def update(what: str, done: int, total: int) -> None:
            bar.update(task, description=what[:60], completed=done, total=total or None)

        yield update
