"""`kernelcup runners check`: the routing table (KERNELCUP_ROUTES) and a check of every launcher in it.

Checks configuration and credentials, then runs a no-op job through every route whose check passed
(``runners.launchers.probe``) and says whether it ran sandboxed and whether the worker would store its results;
``--no-job`` skips the job. Every check and job is bounded (``--timeout``, ``--job-timeout``), so with no network
the table says what could not be reached instead of hanging.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

from kernelcup.commands.text import safe

if TYPE_CHECKING:
    from rich.table import Table

    from runners.launchers.base import Launcher


@dataclass(frozen=True)
class CheckLine:
    device: str
    launcher: str
    ok: bool
    message: str
    warning: str = ""
    sandboxed: bool | None = None
    """Whether the no-op job ran sandboxed (None: no job ran)."""


def margin_warning(launcher: Launcher, worker_margin_s: float) -> str:
    """Say so when the worker would cut a launcher's own bounded wait short (it re-attaches, but burns a retry)."""
    needed = launcher.wait_margin_s
    if needed <= worker_margin_s:
        return ""
    return (
        f"this launcher may wait up to {needed:.0f} s beyond a request's limits (queue, cold start) but workers "
        f"give it {worker_margin_s:.0f} s: set KERNELCUP_WORKER_LAUNCH_MARGIN_S={needed:.0f} or more"
    )


async def check_routes(limit_s: float, job_limit_s: float | None = None) -> list[CheckLine]:
    """Build the router from the settings and check each route, each within ``limit_s`` seconds; with
    ``job_limit_s``, also run the no-op job through each route whose check passed (concurrently, each bounded)."""
    import asyncio

    from kernelcup.settings import SettingsError, load
    from kernelcup.wiring import checking_router
    from leaderboards.worker import WorkerSettings
    from runners.launchers.probe import probe

    router = checking_router()
    try:
        worker_margin = load(WorkerSettings).launch_margin_s
    except SettingsError:
        worker_margin = None
    rows = await router.check(limit_s=limit_s)
    lines = []
    for row in rows:
        warning = ""
        ok, message = row.ok, row.message
        if row.ok and worker_margin is not None:
            warning = margin_warning(router.launcher_for_route(row.route), worker_margin)
        # A local route to a GPU this machine lacks (only a route whose launcher could be built has one to ask).
        if ok and row.route.device != "*":
            problem = await asyncio.to_thread(router.launcher_for_route(row.route).cannot_serve, row.route.device)
            if problem is not None:
                ok, message = False, f"{message}\n{problem}"
        lines.append(CheckLine(row.route.device, row.route.launcher_name, ok, message, warning))
    if job_limit_s is None:
        return lines

    async def with_job(line: CheckLine, route: object) -> CheckLine:
        if not line.ok:
            return line
        device = "cpu" if line.device == "*" else line.device
        outcome = await probe(router.launcher_for_route(route), device, job_limit_s)  # type: ignore[arg-type]
        message = f"{line.message}\n{outcome.message}"
        return CheckLine(line.device, line.launcher, outcome.ok, message, line.warning, outcome.sandboxed)

    return list(await asyncio.gather(*(with_job(line, row.route) for line, row in zip(lines, rows, strict=True))))


@dataclass(frozen=True)
class WorkerLine:
    worker: str
    devices: str
    healthy: bool
    note: str


def worker_health(limit_s: float) -> tuple[list[WorkerLine], str]:
    """The live workers of the configured database and whether each claims jobs; ([], why) when unreadable."""
    import threading

    from kernelcup.commands.common import database_error
    from kernelcup.settings import SettingsError
    from kernelcup.wiring import open_platform
    from leaderboards.errors import KernelcupError

    found: list[object] = []

    def read() -> None:
        try:
            with open_platform(migrate=False) as platform:
                found.append(platform.service.queue_stats())
        except (KernelcupError, SettingsError) as exc:
            found.append(str(exc))
        except Exception as exc:
            from sqlalchemy.exc import DBAPIError

            found.append(database_error(exc) if isinstance(exc, DBAPIError) else f"{type(exc).__name__}: {exc}")

    thread = threading.Thread(target=read, daemon=True, name="kernelcup-runners-check-db")
    thread.start()
    thread.join(limit_s)
    if not found:
        return [], f"the database gave no answer within {limit_s:g} s"
    stats = found[0]
    if isinstance(stats, str):
        return [], stats
    return [
        WorkerLine(w.worker_id, ", ".join(w.devices) or "any", w.healthy, w.health_note)
        for w in stats.workers  # type: ignore[attr-defined]
    ], ""


def render_workers(workers: list[WorkerLine], note: str) -> Table:
    from rich.table import Table

    table = Table(title="workers (live, from the database)")
    table.add_column("worker")
    table.add_column("devices")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    for w in workers:
        status = "[green]claiming[/green]" if w.healthy else "[red]unhealthy[/red]"
        table.add_row(safe(w.worker), safe(w.devices), status, safe(w.note))
    if not workers:
        table.add_row("-", "-", "[yellow]none[/yellow]", safe(note or "no worker heartbeated in the last minute"))
    return table


def render(lines: list[CheckLine]) -> Table:
    from rich.table import Table

    table = Table(title="runners (KERNELCUP_ROUTES)")
    table.add_column("device")
    table.add_column("launcher")
    table.add_column("status")
    table.add_column("sandboxed")
    table.add_column("detail", overflow="fold")
    for line in lines:
        status = "[green]ok[/green]" if line.ok else "[red]failed[/red]"
        if line.ok and line.warning:
            status = "[yellow]warning[/yellow]"
        detail = safe(line.message) + (f"\n[yellow]{safe(line.warning)}[/yellow]" if line.warning else "")
        sandboxed = {None: "-", True: "[green]yes[/green]", False: "[red]no[/red]"}[line.sandboxed]
        table.add_row(safe(line.device), safe(line.launcher), status, sandboxed, detail)
    return table


def register(app: typer.Typer) -> None:
    runners_app = typer.Typer(help="Remote and local runners: routing and launcher checks.", no_args_is_help=True)

    @runners_app.command("check")
    def check(
        timeout: float = typer.Option(15.0, "--timeout", min=0.1, help="Seconds each launcher's check may take."),
        no_job: bool = typer.Option(
            False, "--no-job", help="Check configuration and credentials only; run no job (costs no runner time)."
        ),
        job_timeout: float = typer.Option(
            600.0,
            "--job-timeout",
            min=1.0,
            help="Seconds the no-op job may take on each route (a remote runner's queue and cold start included).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the table as JSON."),
        workers: bool = typer.Option(
            False,
            "--workers",
            help="Also list the live workers in the database (DATABASE_URL) and whether each claims jobs; --json then "
            "prints {routes, workers}.",
        ),
    ) -> None:
        """Print the routing table, check each launcher's configuration and credentials, then run a no-op job
        (a trivial Python submission, no GPU work) through each ready route and report whether it ran in the
        sandbox and whether workers would store that route's results (--no-job skips the job). With --workers,
        also the live workers and whether each claims jobs (one whose runner fails its self-check or failed jobs
        in a row does not, and says why).

        Exits 1 when a route's launcher is not ready, its no-op job fails or would be refused, or (--workers) a
        live worker is unhealthy or none is live.
        """
        import asyncio

        from rich.console import Console

        from kernelcup.commands.common import print_json
        from kernelcup.settings import SettingsError

        try:
            lines = asyncio.run(check_routes(timeout, None if no_job else job_timeout))
        except SettingsError as exc:
            typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
            raise typer.Exit(1) from None
        live, note = worker_health(timeout) if workers else ([], "")
        if as_json:
            print_json({"routes": lines, "workers": live, "workers_note": note} if workers else lines)
        else:
            Console().print(render(lines))
            if workers:
                Console().print(render_workers(live, note))
        if not all(line.ok for line in lines) or not all(w.healthy for w in live) or (workers and not live):
            raise typer.Exit(1)

    app.add_typer(runners_app, name="runners")
