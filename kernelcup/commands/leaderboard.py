"""`kernelcup leaderboard list|show`: the leaderboards and their rankings per device (local, or through a server's
API: see ``kernelcup.remote``); `kernelcup leaderboard update`: rename one or move its deadline, on the server's own
database (an admin's command, like `kernelcup tokens`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

from kernelcup.commands.common import format_time, open_service, print_json, shell_actor, user_errors
from kernelcup.commands.text import safe
from kernelcup.remote import client_for, resolve, server_option
from leaderboards.dates import DATE_HELP, parse_when

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from leaderboards.results import LeaderboardSummary, Ranking
    from web.schemas import LeaderboardOut, RankingOut


def _state(lb: LeaderboardSummary | LeaderboardOut) -> str:
    if not lb.is_open:
        return "closed"
    return "paused" if lb.paused else "open"


def ranking_table(ranking: Ranking | RankingOut) -> Table:
    from rich.table import Table

    from leaderboards.formatting import format_ns

    table = Table(title=f"{safe(ranking.leaderboard)} on {safe(ranking.device)} (ranked by {ranking.ranking_by})")
    for col, justify in (
        ("#", "right"),
        ("user", "left"),
        ("score", "right"),
        ("submission", "right"),
        ("file", "left"),
        ("submitted", "left"),
    ):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for e in ranking.entries:
        table.add_row(
            str(e.rank),
            safe(e.user_name),
            format_ns(e.score_ns),
            f"#{e.submission_id}",
            safe(e.file_name),
            format_time(e.submitted_at),
        )
    if not ranking.entries:
        table.caption = "no ranked submissions yet"
    elif ranking.total > len(ranking.entries):
        table.caption = f"top {len(ranking.entries)} of {ranking.total}"
    return table


def print_rankings(
    console: Console, lb: LeaderboardSummary | LeaderboardOut, rankings: Sequence[Ranking | RankingOut]
) -> None:
    """The leaderboard's head line and description, a table per device with entries, and one line for the
    devices that have none (not a column of empty tables)."""
    description = lb.description.strip().splitlines()[0] if lb.description.strip() else ""
    console.print(f"[bold]{safe(lb.name)}[/bold] ({lb.lang}, {_state(lb)}, deadline {format_time(lb.deadline)})")
    if description:
        console.print(safe(description))
    for ranking in rankings:
        if ranking.entries:
            console.print(ranking_table(ranking))
    empty = [r.device for r in rankings if not r.entries]
    if empty:
        where = "any device" if len(empty) == len(rankings) and len(empty) > 1 else ", ".join(empty)
        device = empty[0] if len(empty) == 1 else "DEVICE"
        console.print(
            f"no ranked submissions yet on {safe(where)} (`kernelcup submit FILE -l {safe(lb.name)} -d {safe(device)}`)"
        )


def register(app: typer.Typer) -> None:
    lb_app = typer.Typer(help="Leaderboards and rankings.", no_args_is_help=True)
    app.add_typer(lb_app, name="leaderboard")

    @lb_app.command("list")
    def list_cmd(
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        include_hidden: bool = typer.Option(False, "--all", help="Include hidden leaderboards (local database)."),
        server: str | None = server_option(),
    ) -> None:
        """List the leaderboards with their devices, deadline and state."""
        from rich.console import Console
        from rich.table import Table

        login = resolve(server)
        with user_errors():
            if login is not None:
                with client_for(login) as client:
                    boards: Sequence[LeaderboardSummary | LeaderboardOut] = client.leaderboards()
            else:
                boards = open_service().list_leaderboards(include_hidden=include_hidden)
        if json_out:
            print_json(boards)
            return
        table = Table(title="leaderboards")
        for col in ("name", "lang", "devices", "deadline", "state", "submissions"):
            table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
        for lb in boards:
            table.add_row(
                safe(lb.name),
                lb.lang,
                safe(", ".join(lb.devices)),
                format_time(lb.deadline),
                _state(lb),
                str(lb.submissions),
            )
        if not boards:
            table.caption = "none yet: run `kernelcup problems sync`"
        Console().print(table)

    @lb_app.command("show")
    def show_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        device: list[str] = typer.Option(None, "--device", "-d", help="Only this device (repeatable)."),
        limit: int = typer.Option(20, "--limit", "-n", min=1, help="How many places to show per device."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """Show a leaderboard's ranking on each of its devices (or the ones given)."""
        from rich.console import Console

        login = resolve(server)
        with user_errors():
            lb: LeaderboardSummary | LeaderboardOut
            rankings: list[Ranking] | list[RankingOut]
            if login is not None:
                with client_for(login) as client:
                    lb = client.leaderboard(name)
                    rankings = [client.rankings(name, d, limit=limit) for d in (device or lb.devices)]
            else:
                service = open_service()
                lb = service.leaderboard(name)
                rankings = [service.ranking(name, d, limit) for d in (device or lb.devices)]
        if json_out:
            print_json({"leaderboard": lb, "rankings": rankings})
            return
        print_rankings(Console(), lb, rankings)

    @lb_app.command("update")
    def update_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        rename: str | None = typer.Option(None, "--rename", help="A new name for it."),
        deadline: str | None = typer.Option(None, "--deadline", help=f"A new deadline ({DATE_HELP})."),
        force: bool = typer.Option(
            False, "--force", help="Apply it even while it is live (queued or running jobs, ranked entries)."
        ),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Rename a leaderboard or move its deadline (the server's own database). While it is live, renaming it or
        moving its deadline into the past says what it would affect and needs --force; the audit log records it."""
        with user_errors():
            when = parse_when(deadline) if deadline else None
            result = open_service().update_leaderboard(
                name, new_name=rename, deadline=when, force=force, actor=shell_actor("leaderboard update")
            )
        if json_out:
            print_json(result)
        elif not result.changed:
            typer.echo(f"{safe(name)}: nothing to change.")
        else:
            lb = result.leaderboard
            typer.echo(f"{safe(lb.name)} updated: {', '.join(result.changed)} (deadline {format_time(lb.deadline)}).")
