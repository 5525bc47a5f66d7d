"""`kernelcup leaderboard standings NAME [--final]`: a leaderboard's live standings (the ranking with each entry's
system-test coverage) or its frozen final standings (ties, 95% intervals, entries left out); `kernelcup leaderboard
system-test NAME [--top K]`: queue the system tests of each device's top K entries (the server's own database, an
admin's command); `kernelcup leaderboard retime NAME` and `retiming NAME`: re-time each device's top entries
interleaved, spread over its live workers, and read the pooled result. Added to the group
``kernelcup.commands.leaderboard`` made (docs/competitions.md)."""

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
    from leaderboards.retiming import RetimingView
    from web.routes.standings import StandingsOut


def _leaderboard_group(app: typer.Typer) -> typer.Typer:
    for group in app.registered_groups:
        if group.name == "leaderboard" and group.typer_instance is not None:
            return group.typer_instance
    raise RuntimeError("register kernelcup.commands.leaderboard before kernelcup.commands.standings")


def _actor(command: str = "system-test") -> str:
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        who = f"uid {os.getuid()}"
    return f"shell:{who} (kernelcup leaderboard {command})"


def standings_table(view: StandingsView | StandingsOut) -> Table:
    from rich.table import Table

    from leaderboards.formatting import format_ns, format_range
    from leaderboards.holdout import held_out_text

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
        held_out = held_out_text(row.coverage, row.holdout_ns)
        cells += [held_out, f"#{row.submission_id}", safe(row.file_name), safe(row.note or "")]
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


def retiming_table(view: RetimingView) -> Table:
    from rich.table import Table

    from leaderboards.formatting import format_ns, format_range

    table = Table(title=f"{safe(view.leaderboard)} on {safe(view.device)}: re-timed, {view.done} of {view.rounds} "
                        f"rounds on {view.machines} machine{'s' if view.machines != 1 else ''}")  # fmt: skip
    for col in ("#", "user", "score", "95% interval", "rounds", "per machine", "submission"):
        table.add_column(col, overflow="fold")
    for row in view.rows:
        machines = "; ".join(f"{safe(m.machine)}: {format_ns(m.score_ns)} ({m.rounds})" for m in row.machines)
        rank = f"{row.rank}=" if row.tied else str(row.rank)
        interval = format_range(row.low_ns, row.high_ns)
        table.add_row(rank, safe(row.user_name), format_ns(row.score_ns), interval, str(row.rounds), machines,
                      f"#{row.submission_id}")  # fmt: skip
    notes = ["'=' marks entries the paired compare cannot tell apart (95%)"]
    if view.done < 2:
        notes.append("fewer than two rounds have run: nothing to rank yet")
    notes += [f"#{sid}: a run failed in some round (not ranked here)" for sid in view.failed]
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

    @lb_app.command("freeze")
    def freeze_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        device: list[str] = typer.Option(None, "--device", "-d", help="Only this device (repeatable)."),
    ) -> None:
        """Freeze a leaderboard's final standings by hand, after its deadline (the workers' housekeeping does it on
        its own once the system tests have run): each device's, or says why not yet (the server's own database)."""
        from leaderboards.errors import UserError

        with user_errors():
            service = open_service()
            devices = device or list(service.leaderboard(name).devices)
        refused = 0
        for d in devices:
            try:
                view = service.freeze_standings(name, d, actor=_actor("freeze"))
            except UserError as exc:
                refused += 1
                typer.echo(f"{safe(name)} on {safe(d)}: not frozen: {exc}")
                continue
            typer.echo(f"{safe(view.leaderboard)} on {safe(view.device)}: froze {len(view.rows)} entries "
                       f"({len(view.excluded)} left out); see: kernelcup leaderboard standings {safe(name)} "
                       "--final")  # fmt: skip
        if refused:
            raise typer.Exit(1)

    @lb_app.command("retime")
    def retime_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        top: int = typer.Option(10, "--top", "-k", min=2, max=1000, help="How many entries per device."),
        rounds: int = typer.Option(6, "--rounds", "-r", min=2, max=50, help="Interleaved rounds."),
        device: str | None = typer.Option(None, "--device", "-d", help="Only this device."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Re-time each device's top entries side by side: ROUNDS rounds, each one benchmark run of every entry on one
        machine on the same inputs, the order alternating, the rounds spread over every live worker serving the
        device (one machine: all on it). Run by the workers below everyone's submissions (the server's own
        database); `kernelcup leaderboard retiming NAME` reads the result."""
        with user_errors():
            queued = open_service().queue_retiming(name, actor=_actor("retime"), top=top, rounds=rounds,
                                                   device=device)  # fmt: skip
        if json_out:
            print_json(queued)
            return
        if not queued:
            typer.echo(f"{safe(name)}: nothing to re-time (no device has two ranked entries)")
        for q in queued:
            where = ", ".join(safe(w) for w in q.workers) or "whichever worker comes (none is alive now)"
            typer.echo(f"{safe(q.leaderboard)} on {safe(q.device)}: queued {q.rounds} rounds of {len(q.entries)} "
                       f"entries, spread over {where}")  # fmt: skip

    @lb_app.command("retiming")
    def retiming_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        device: str | None = typer.Option(None, "--device", "-d", help="The device (optional when there is one)."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """The latest re-timing of a device: each entry's score pooled over the rounds, its 95% interval, its figure
        on each machine, and ranks, shared where the paired compare cannot tell entries apart."""
        from rich.console import Console

        with user_errors():
            view = open_service().retiming(name, device)
        if json_out:
            print_json(view)
            return
        Console().print(retiming_table(view))
