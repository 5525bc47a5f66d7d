"""`kernelcup admin ...`: an organiser's operations, the admin API's (``/api/v1/admin``) from a shell.

- `pause NAME` / `resume NAME`: refuse new submissions, or accept them again;
- `deadline NAME WHEN [--force]`: move the deadline (``YYYY-MM-DD HH:MM`` in UTC, ``leaderboards.dates``);
- `hide NAME` / `show NAME`: a hidden leaderboard is seen only by admins and the members its invite codes let in;
- `rate-limit NAME (N | --default)`: submissions per user per hour;
- `ban USER --reason WHY` / `unban USER`: ``discord:ID`` or a local name;
- `stats [--days N]`: the queue, the live workers and usage.

Through a server (``--server URL``, ``KERNELCUP_SERVER`` or a stored login; ``kernelcup.remote``) the token must carry
the admin scope and the server's audit log names its owner; on the local database every change is audited as the
shell user who ran it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import typer

from kernelcup.commands.common import format_time, open_service, print_json, shell_actor, user_errors
from kernelcup.commands.text import safe
from kernelcup.remote import client_for, resolve, server_option
from leaderboards.dates import DATE_HELP

if TYPE_CHECKING:
    from datetime import datetime

    from kernelcup.client import Client
    from leaderboards.results import LeaderboardSummary, QueueStats, UsageStats, UserRef, UserView
    from leaderboards.service import LeaderboardService
    from web.schemas import LeaderboardOut, QueueStatsOut, StatsOut, UsageStatsOut, UserOut

JSON_HELP = "Machine-readable output."


R = TypeVar("R")
L = TypeVar("L")


def _act(
    server: str | None, command: str, remote: Callable[[Client], R], local: Callable[[LeaderboardService, str], L]
) -> R | L:
    """One operation: through the server's API when ``--server``, ``KERNELCUP_SERVER`` or a login names one (the
    token's owner is the actor), else on the local database, audited as the shell user running ``command``. Its
    errors become one message and exit status 1."""
    login = resolve(server)
    with user_errors():
        if login is not None:
            with client_for(login) as client:
                return remote(client)
        return local(open_service(), shell_actor(f"admin {command}"))


def board_line(lb: LeaderboardSummary | LeaderboardOut) -> str:
    """One leaderboard's organiser-facing state: open or closed, paused, hidden, deadline, rate limit."""
    state = (
        ("open" if lb.is_open else "closed") + (", paused" if lb.paused else "") + ("" if lb.visible else ", hidden")
    )
    limit = f"{lb.rate_limit_per_hour}/hour" if lb.rate_limit_per_hour is not None else "the server's default"
    return f"{safe(lb.name)}: {state}; deadline {format_time(lb.deadline)}; rate limit {limit}"


def user_line(user: UserView | UserOut) -> str:
    ban = f"banned ({safe(user.ban_reason or 'no reason given')})" if user.is_banned else "not banned"
    return f"{safe(user.identity)} ({safe(user.name)}): {ban}"


def stats_lines(queue: QueueStats | QueueStatsOut, usage: UsageStats | UsageStatsOut) -> list[str]:
    lines = ["queue:"]
    for device, counts in sorted(queue.jobs.items()):
        lines.append(f"  {safe(device)}: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    if not queue.jobs:
        lines.append("  no jobs")
    if queue.oldest_queued_at is not None:
        lines.append(f"  oldest queued job since {format_time(queue.oldest_queued_at)}")
    lines.append(f"live workers: {len(queue.workers)}")
    for w in queue.workers:
        devices = ", ".join(safe(d) for d in w.devices) or "every device"
        health = "" if w.healthy else f"; UNHEALTHY, claims no jobs: {safe(w.health_note)}"
        lines.append(f"  {safe(w.worker_id)} on {safe(w.hostname)}: {devices}; heartbeat {format_time(w.heartbeat_at)}"
                     f"{health}")  # fmt: skip
    since = f"since {format_time(usage.since)}" if usage.since else "all time"
    lines.append(f"usage ({since}): {usage.submissions} submissions by {usage.users} users, "
                 f"{usage.runs_seconds / 3600:.1f} runner hours, {usage.impossible_runs} impossible runs")  # fmt: skip
    for board, n in sorted(usage.by_leaderboard.items()):
        lines.append(f"  {safe(board)}: {n}")
    return lines


def register(app: typer.Typer) -> None:
    admin_app = typer.Typer(
        help="An organiser's operations (the admin API's): pause, resume, deadline, hide, show, rate-limit, ban, "
        "unban, stats, budget. On the local database, or a server's with an admin token (--server).",
        no_args_is_help=True,
    )
    app.add_typer(admin_app, name="admin")

    def show_board(lb: LeaderboardSummary | LeaderboardOut, json_out: bool) -> None:
        if json_out:
            print_json(lb)
        else:
            typer.echo(board_line(lb))

    def show_user(user: UserView | UserOut, json_out: bool) -> None:
        if json_out:
            print_json(user)
        else:
            typer.echo(user_line(user))

    def update(
        name: str,
        command: str,
        server: str | None,
        json_out: bool,
        *,
        deadline: datetime | None = None,
        visible: bool | None = None,
        force: bool = False,
    ) -> None:
        """Move the deadline or show/hide, and say what changed."""
        result = _act(
            server,
            command,
            lambda client: client.update_leaderboard(name, deadline=deadline, visible=visible, force=force),
            lambda service, actor: service.update_leaderboard(
                name, deadline=deadline, visible=visible, force=force, actor=actor
            ),
        )
        if json_out:
            print_json(result)
            return
        typer.echo(f"{board_line(result.leaderboard)} ({', '.join(result.changed) or 'nothing changed'})")

    @admin_app.command("pause")
    def pause_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Refuse new submissions on a leaderboard (queued ones still run) until `kernelcup admin resume`."""
        lb: LeaderboardSummary | LeaderboardOut = _act(
            server, "pause", lambda client: client.pause(name), lambda service, actor: service.pause(name, actor=actor)
        )
        show_board(lb, json_out)

    @admin_app.command("resume")
    def resume_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Accept submissions again on a paused leaderboard."""
        lb: LeaderboardSummary | LeaderboardOut = _act(
            server,
            "resume",
            lambda client: client.resume(name),
            lambda service, actor: service.resume(name, actor=actor),
        )
        show_board(lb, json_out)

    @admin_app.command("deadline")
    def deadline_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        when: str = typer.Argument(..., help=f"The new deadline: {DATE_HELP}."),
        force: bool = typer.Option(
            False, "--force", help="Move it into the past even while the leaderboard is live (jobs, ranked entries)."
        ),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Move a leaderboard's deadline. Moving a live one's into the past says what it affects and needs --force."""
        from leaderboards.dates import parse_when

        with user_errors():
            deadline = parse_when(when)
        update(name, "deadline", server, json_out, deadline=deadline, force=force)

    @admin_app.command("hide")
    def hide_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Hide a leaderboard: only admins and members let in by an invite code (`kernelcup invites`) see it."""
        update(name, "hide", server, json_out, visible=False)

    @admin_app.command("show")
    def show_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Show a hidden leaderboard to everyone again."""
        update(name, "show", server, json_out, visible=True)

    @admin_app.command("rate-limit")
    def rate_limit_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        per_hour: int | None = typer.Argument(None, min=1, help="Submissions per user per hour, every mode counted."),
        default: bool = typer.Option(False, "--default", help="Back to the server's defaults (no limit of its own)."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Set how many submissions a user may make per hour on a leaderboard, or --default for the server's."""
        if (per_hour is None) != default:
            raise typer.BadParameter("give a number of submissions per hour, or --default (not both)")
        lb: LeaderboardSummary | LeaderboardOut = _act(
            server,
            "rate-limit",
            lambda client: client.set_rate_limit(name, per_hour),
            lambda service, actor: service.set_rate_limit(name, per_hour, actor=actor),
        )
        show_board(lb, json_out)

    @admin_app.command("ban")
    def ban_cmd(
        user: str = typer.Argument(..., help="discord:ID, or a local name."),
        reason: str = typer.Option(..., "--reason", "-r", help="Why (the audit log keeps it)."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Ban a user: their submissions are refused and they leave every ranking (kept: unbanning restores them)."""
        view: UserView | UserOut = _act(
            server,
            "ban",
            lambda client: client.ban(user, reason),
            lambda service, actor: service.ban_user(_user(user), reason=reason, actor=actor),
        )
        show_user(view, json_out)

    @admin_app.command("unban")
    def unban_cmd(
        user: str = typer.Argument(..., help="discord:ID, or a local name."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Lift a ban: the user may submit again and their entries rank again."""
        view: UserView | UserOut = _act(
            server,
            "unban",
            lambda client: client.unban(user),
            lambda service, actor: service.unban_user(_user(user), actor=actor),
        )
        show_user(view, json_out)

    @admin_app.command("stats")
    def stats_cmd(
        days: int | None = typer.Option(
            None, "--days", min=1, max=3650, help="Usage of the last N days (default: all)."
        ),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """The queue (jobs per device and state), the live workers and usage (submissions, users, runner time)."""
        from datetime import UTC, datetime, timedelta

        since = datetime.now(UTC) - timedelta(days=days) if days else None
        queue, usage = _act(
            server,
            "stats",
            lambda client: _queue_and_usage(client.stats(days)),
            lambda service, _actor: (service.queue_stats(), service.usage_stats(since)),
        )
        if json_out:
            print_json({"queue": queue, "usage": usage})
            return
        typer.echo("\n".join(stats_lines(queue, usage)))


def _queue_and_usage(stats: StatsOut) -> tuple[QueueStatsOut, UsageStatsOut]:
    return stats.queue, stats.usage


def _user(text: str) -> UserRef:
    from web.routes.common import parse_user  # its bounds: a name of 1 to 100 characters, a 64-bit Discord id

    return parse_user(text)
