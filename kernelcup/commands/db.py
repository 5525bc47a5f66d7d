"""`kernelcup db`: migrate the database and show where it is."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelcup.commands.common import core_settings, print_json, user_errors


def register(app: typer.Typer) -> None:
    db_app = typer.Typer(help="The database: migrations and status.", no_args_is_help=True)
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
