"""`kernelcup runners check`: the routing table (KERNELCUP_ROUTES) and a check of every launcher in it.

Checks configuration and credentials without running a job. Every check is bounded (``--timeout``), so with no
network the table says what could not be reached instead of hanging.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import typer
from rich.console import Console
from rich.table import Table

from kernelcup.settings import SettingsError, load


@dataclass(frozen=True)
class CheckLine:
    device: str
    launcher: str
    ok: bool
    message: str
    warning: str = ""


def margin_warning(launcher: object, worker_margin_s: float) -> str:
    """Say so when the worker would cut a launcher's own bounded wait short (it re-attaches, but burns a retry)."""
    needed = getattr(launcher, "wait_margin_s", None)
    if not isinstance(needed, int | float) or needed <= worker_margin_s:
        return ""
    return (
        f"this launcher may wait up to {needed:.0f} s beyond a request's limits (queue, cold start) but workers "
        f"give it {worker_margin_s:.0f} s: set KERNELCUP_WORKER_LAUNCH_MARGIN_S={needed:.0f} or more"
    )


async def check_routes(limit_s: float) -> list[CheckLine]:
    """Build the router from the settings and check each route, each within ``limit_s`` seconds."""
    from leaderboards.worker import WorkerSettings
    from runners.routing import RoutingSettings, build_router

    router = build_router(load(RoutingSettings))
    try:
        worker_margin = load(WorkerSettings).launch_margin_s
    except SettingsError:
        worker_margin = None
    rows = await router.check(limit_s=limit_s)
    lines = []
    for row in rows:
        warning = ""
        if row.ok and worker_margin is not None:
            warning = margin_warning(router.launcher_for_route(row.route), worker_margin)
        lines.append(CheckLine(row.route.device, row.route.launcher_name, row.ok, row.message, warning))
    return lines


def render(lines: list[CheckLine]) -> Table:
    table = Table(title="runners (KERNELCUP_ROUTES)")
    table.add_column("device")
    table.add_column("launcher")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    for line in lines:
        status = "[green]ok[/green]" if line.ok else "[red]failed[/red]"
        if line.ok and line.warning:
            status = "[yellow]warning[/yellow]"
        detail = line.message + (f"\n[yellow]{line.warning}[/yellow]" if line.warning else "")
        table.add_row(line.device, line.launcher, status, detail)
    return table


def register(app: typer.Typer) -> None:
    runners_app = typer.Typer(help="Remote and local runners: routing and launcher checks.", no_args_is_help=True)

    @runners_app.command("check")
    def check(
        timeout: float = typer.Option(15.0, "--timeout", min=0.1, help="Seconds each launcher's check may take."),
        as_json: bool = typer.Option(False, "--json", help="Print the table as JSON."),
    ) -> None:
        """Print the routing table and check each launcher's configuration and credentials (runs no job).

        Exits 1 when a route's launcher is not ready.
        """
        from kernelcup.commands.common import print_json

        try:
            lines = asyncio.run(check_routes(timeout))
        except SettingsError as exc:
            typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
            raise typer.Exit(1) from None
        if as_json:
            print_json(lines)
        else:
            Console().print(render(lines))
        if not all(line.ok for line in lines):
            raise typer.Exit(1)

    app.add_typer(runners_app, name="runners")
