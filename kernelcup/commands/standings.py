"""`kernelcup leaderboard standings NAME [--final]`: a leaderboard's live standings (the ranking with each entry's
system-test coverage) or its frozen final standings (ties, 95% intervals, entries left out); `kernelcup leaderboard
system-test NAME [--top K]`: queue the system tests of each device's top K entries (the server's own database, an
admin's command). Added to the group ``kernelcup.commands.leaderboard`` made (docs/competitions.md)."""

from __future__ import annotations

import getpass
import os
from typing import TYPE_CHECKING

import typer

from kernelcup.commands.common import format_time, open_service, print_json, user_errors
from kernelcup.commands.text import safe
from kernelcup.remote import client_for, resolve, server_option

if TYPE_CHECKING:
    from rich.table import Table

    from leaderboards.competition import StandingsView
    from web.routes.standings import StandingsOut


def _leaderboard_group(app: typer.Typer) -> typer.Typer:
    for group in app.registered_groups:
        if group.name == "leaderboard" and group.typer_instance is not None:
            return group.typer_instance
    raise RuntimeError("register kernelcup.commands.leaderboard before kernelcup.commands.standings")


def _actor() -> str:
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        who = f"uid {os.getuid()}"
    return f"shell:{who} (kernelcup leaderboard system-test)"


def standings_table(view: StandingsView | StandingsOut) -> Table:
    from rich.table import Table

    from leaderboards.formatting import format_ns, format_range

    kind = "final standings" if view.final else "live standings"
    table = Table(title=f"{safe(view.leaderboard)} on {safe(view.device)}: {kind}")
    interval = ["95% interval"] if view.final else []
    columns = ["#", "user", "score", *interval, "held-out", "submission", "file", "note"]
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in view.rows:
        cells = [f"{row.rank}=" if row.tied else str(row.rank), safe(row.user_name), format_ns(row.score_ns)]
        if view.final:
            cells.append(format_range(row.low_ns, row.high_ns) if row.low_ns and row.high_ns else "")
        cells += [row.coverage or "", f"#{row.submission_id}", safe(row.file_name), safe(row.note or "")]
        table.add_row(*cells)
    notes = []
    if view.final:
        notes.append(f"frozen {format_time(view.frozen_at)}; '=' marks entries that cannot be told apart")
    if not view.rows:
        notes.append("no entries")
    for e in view.excluded:
        notes.append(f"left out: {safe(e.user_name)} #{e.submission_id} ({e.coverage})")
    table.caption = "\n".join(notes)
    return table


def register(app: typer.Typer) -> None:
    lb_app = _leaderboard_group(app)

    @lb_app.command("standings")
    def standings_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        device: list[str] = typer.Option(None, "--device", "-d", help="Only this device (repeatable)."),
        final: bool = typer.Option(False, "--final", help="The frozen final standings (after the deadline)."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """A leaderboard's standings per device: live (the ranking, with each entry's held-out coverage once system
        tests ran) or --final (frozen after the deadline's system tests: only entries that passed them, ties marked)."""
        from rich.console import Console

        login = resolve(server)
        with user_errors():
            views: list[StandingsView] | list[StandingsOut]
            if login is not None:
                with client_for(login) as client:
                    devices = device or list(client.leaderboard(name).devices)
                    views = [client.standings(name, d, final=final) for d in devices]
            else:
                service = open_service()
                devices = device or list(service.leaderboard(name).devices)
                views = [service.standings(name, d, final=final) for d in devices]
        if json_out:
            print_json(views)
            return
        console = Console()
        for view in views:
            console.print(standings_table(view))

    @lb_app.command("system-test")
    def system_test_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        top: int = typer.Option(10, "--top", "-k", min=1, max=1000, help="How many entries per device."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Queue the system tests of each device's top entries: their ranked file on the problem's held-out cases,
        run by the workers below everyone's submissions. Only pass counts are kept (the server's own database)."""
        with user_errors():
            queued = open_service().queue_system_tests(name, actor=_actor(), top=top)
        if json_out:
            print_json(queued)
            return
        typer.echo(f"{safe(queued.leaderboard)}: queued {len(queued.entries)} system tests "
                   f"({queued.cases} held-out cases each, top {queued.top} per device)")  # fmt: skip
        for e in queued.entries:
            typer.echo(f"  {safe(e.device)}: {safe(e.user_name)} #{e.submission_id}")
