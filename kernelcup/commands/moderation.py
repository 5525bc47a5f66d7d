"""An organiser's commands of issue 29 on the server's own database, added to the group ``kernelcup leaderboard``
(docs/competitions.md): ``moderate`` and ``moderated`` (entries' moderation), ``audit`` (the audit log),
``rejudge`` and ``rejudges`` (entries run again, their drift), ``alerts`` and ``resolve-alert``. Each change is
audited as the shell user who ran it."""

from __future__ import annotations

import getpass
import os
from datetime import datetime

import typer

from kernelcup.commands.common import format_time, open_service, print_json, user_errors
from kernelcup.commands.standings import _leaderboard_group
from kernelcup.commands.text import safe
from leaderboards.dates import DATE_HELP


def shell_actor(command: str) -> str:
    """Who acts, for the audit log: the shell user and the command."""
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        who = f"uid {os.getuid()}"
    return f"shell:{who} (kernelcup leaderboard {command})"


def _since(text: str | None) -> datetime | None:
    from leaderboards.dates import parse_when

    return parse_when(text, field="since") if text else None


def register(app: typer.Typer) -> None:
    lb_app = _leaderboard_group(app)

    @lb_app.command("moderate")
    def moderate_cmd(
        submission_id: int = typer.Argument(..., min=1, help="The entry's submission id."),
        state: str = typer.Argument(..., help="flagged, quarantined, hacked or cleared."),
        reason: str = typer.Option(..., "--reason", "-r", help="Why: the author reads it, the audit log keeps it."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Flag, quarantine, judge hacked or clear an entry. Quarantined and hacked entries leave every ranking at once
        (live, standings, announcements); cleared ones come back."""
        with user_errors():
            view = open_service().moderate(submission_id, state, actor=shell_actor("moderate"), reason=reason)
        if json_out:
            print_json(view)
            return
        typer.echo(f"#{view.submission_id} of {safe(view.user_name)} on {safe(view.leaderboard)}: {view.state} "
                   f"({safe(view.reason)})")  # fmt: skip

    @lb_app.command("moderated")
    def moderated_cmd(
        leaderboard: str | None = typer.Option(None, "--leaderboard", "-l", help="Only this leaderboard."),
        state: str | None = typer.Option(None, "--state", help="Only this state."),
        limit: int = typer.Option(100, "--limit", "-n", min=1, max=500),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Moderated entries, newest change first."""
        with user_errors():
            views = open_service().moderated(leaderboard=leaderboard, state=state, limit=limit)
        if json_out:
            print_json(views)
            return
        for v in views:
            typer.echo(f"#{v.submission_id} {safe(v.leaderboard)} {safe(v.user_name)}: {v.state} by {safe(v.by)} "
                       f"{format_time(v.at)}: {safe(v.reason)}")  # fmt: skip
        if not views:
            typer.echo("no moderated entries")

    @lb_app.command("audit")
    def audit_cmd(
        actor: str | None = typer.Option(None, "--actor", help="Only this actor (e.g. discord:1)."),
        action: str | None = typer.Option(None, "--action", help="Only this action (e.g. moderate, ban)."),
        leaderboard: str | None = typer.Option(None, "--leaderboard", "-l", help="Only entries about it."),
        since: str | None = typer.Option(None, "--since", help=f"From this time ({DATE_HELP})."),
        before: int | None = typer.Option(None, "--before", min=1, help="Entries older than this id (paging)."),
        limit: int = typer.Option(50, "--limit", "-n", min=1, max=200),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """The audit log, newest first: who did what, when (secrets withheld)."""
        with user_errors():
            page = open_service().audit_log(actor=actor, action=action, leaderboard=leaderboard, since=_since(since),
                                            before=before, limit=limit)  # fmt: skip
        if json_out:
            print_json(page)
            return
        for e in page.entries:
            typer.echo(f"{e.entry_id} {safe(e.text)}")
        if not page.entries:
            typer.echo("no audit entries")
        elif page.next_before is not None:
            typer.echo(f"older: --before {page.next_before}")

    @lb_app.command("rejudge")
    def rejudge_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        top: int = typer.Option(10, "--top", "-k", min=1, max=1000, help="How many entries per device."),
        device: str | None = typer.Option(None, "--device", "-d", help="Only this device."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Run each device's top entries again, below everyone's submissions. Their old results stay their score; the
        new score and its drift are kept with the rejudge (`kernelcup leaderboard rejudges NAME`)."""
        with user_errors():
            queued = open_service().queue_rejudges(name, actor=shell_actor("rejudge"), top=top, device=device)
        if json_out:
            print_json(queued)
            return
        typer.echo(f"{safe(name)}: queued {len(queued)} rejudges (entries already queued are not queued twice)")
        for r in queued:
            typer.echo(f"  {safe(r.device)}: {safe(r.user_name)} #{r.submission_id}")

    @lb_app.command("rejudges")
    def rejudges_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        device: str | None = typer.Option(None, "--device", "-d", help="Only this device."),
        limit: int = typer.Option(100, "--limit", "-n", min=1, max=500),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """A leaderboard's rejudges, newest first: what each entry reads now against its ranked score."""
        with user_errors():
            views = open_service().rejudges(name, device, limit=limit)
        if json_out:
            print_json(views)
            return
        for r in views:
            ref = f"; reference {r.reference_drift:+.1%}" if r.reference_drift is not None else ""
            typer.echo(f"{r.rejudge_id} {safe(r.device)} {safe(r.user_name)} #{r.submission_id} ({r.trigger}): "
                       f"{safe(r.text)}{ref}")  # fmt: skip
        if not views:
            typer.echo("no rejudges")

    @lb_app.command("alerts")
    def alerts_cmd(
        include_resolved: bool = typer.Option(False, "--all", help="Resolved ones too."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Admin alerts (a reference that drifted on a new runtime holds its board's announcements)."""
        with user_errors():
            views = open_service().alerts(include_resolved=include_resolved)
        if json_out:
            print_json(views)
            return
        for a in views:
            state = f"resolved by {safe(a.resolved_by or '')}" if a.resolved_at else "open"
            typer.echo(f"{a.alert_id} [{state}] {format_time(a.created_at)}: {safe(a.message)}")
        if not views:
            typer.echo("no alerts")

    @lb_app.command("resolve-alert")
    def resolve_cmd(
        alert_id: int = typer.Argument(..., min=1),
        reason: str = typer.Option(..., "--reason", "-r", help="Why it is resolved (audited)."),
    ) -> None:
        """Resolve an alert: the announcements it held go on."""
        with user_errors():
            view = open_service().resolve_alert(alert_id, actor=shell_actor("resolve-alert"), reason=reason)
        typer.echo(f"alert {view.alert_id} resolved")
