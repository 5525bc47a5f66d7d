"""`kernelcup submissions list|show ID|code ID|cancel ID|delete ID`: your submissions, local or through a server's API.

Locally (no server configured) they are the submissions of ``--user`` (default: your login name) in the local
database; through a server, those of the account your token speaks for. ``show ID --follow`` picks up a
submission that ``kernelcup submit --no-wait`` left running and shows its progress until it is done.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

from kernelcup.commands.common import format_time, open_service, print_json, user_errors
from kernelcup.commands.submit import DEFAULT_TIMEOUT_S, render_details, show_progress, stopped_waiting
from kernelcup.commands.text import safe
from kernelcup.remote import client_for, resolve, server_option

if TYPE_CHECKING:
    from rich.table import Table

    from leaderboards.results import (
        JobView,
        SubmissionCodeView,
        SubmissionDetails,
        SubmissionStatus,
        SubmissionSummary,
        UserRef,
    )
    from web.schemas import CodeOut, JobOut, SubmissionOut, SubmissionStatusOut, SubmissionSummaryOut

USER_HELP = "Local database only: whose submissions (default: your login name)."


def _who(user: str) -> UserRef:
    from leaderboards.results import UserRef

    return UserRef(user or getpass.getuser())


def _local_only(user: str, login: object) -> None:
    if login is not None and user:
        raise typer.BadParameter("a server knows you by your token; --user is for the local database")


def job_summary(job: JobView | JobOut) -> str:
    from leaderboards.formatting import outcome_text, score_text

    text = f"{job.device}: {outcome_text(job.status, job.verdict)}"
    if job.score_ns is not None:
        text += f" {score_text(job.score_ns, job.ranked_score_ns)}"
    if job.rank is not None:
        text += f" #{job.rank}"
    return text


def submissions_table(subs: Sequence[SubmissionSummary | SubmissionSummaryOut]) -> Table:
    from rich.table import Table

    table = Table(title="your submissions (newest first)")
    for col in ("id", "leaderboard", "file", "mode", "submitted", "devices"):
        table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
    for s in subs:
        table.add_row(
            f"#{s.submission_id}",
            safe(s.leaderboard),
            safe(s.file_name),
            s.mode.value + (f"\n{safe(s.late)}" if s.late else ""),
            format_time(s.created_at),
            safe("; ".join(job_summary(j) for j in s.jobs) + (f"\n{s.moderation_note}" if s.moderation_note else "")),
        )
    if not subs:
        table.caption = "none yet: `kernelcup submit FILE`"
    return table


def register(app: typer.Typer) -> None:
    subs_app = typer.Typer(help="Your submissions: list, show, code, cancel, delete.", no_args_is_help=True)
    app.add_typer(subs_app, name="submissions")

    @subs_app.command("list")
    def list_cmd(
        leaderboard: str | None = typer.Option(None, "--leaderboard", "-l", help="Only this leaderboard."),
        limit: int = typer.Option(50, "--limit", "-n", min=1, max=500),
        user: str = typer.Option("", "--user", "-u", help=USER_HELP),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """List your submissions with each device's status, verdict, score and rank."""
        from rich.console import Console

        login = resolve(server)
        _local_only(user, login)
        with user_errors():
            subs: Sequence[SubmissionSummary | SubmissionSummaryOut]
            if login is not None:
                with client_for(login) as client:
                    subs = client.submissions(leaderboard, limit=limit)
            else:
                subs = open_service().user_submissions(_who(user), leaderboard, limit=limit, admin=True)
        if json_out:
            print_json(subs)
        else:
            Console().print(submissions_table(subs))

    @subs_app.command("show")
    def show_cmd(
        submission_id: int = typer.Argument(..., help="The submission's id."),
        follow: bool = typer.Option(False, "--follow", "-f", help="Show its progress until it is done first."),
        timeout: float = typer.Option(DEFAULT_TIMEOUT_S, "--timeout", min=1, help="Longest wait with --follow (s)."),
        user: str = typer.Option("", "--user", "-u", help=USER_HELP),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """A submission's status and results (the report `kernelcup submit` prints)."""
        from rich.console import Console

        from leaderboards.events import FollowTimeout

        login = resolve(server)
        _local_only(user, login)
        console = Console(stderr=json_out)
        details: SubmissionDetails | SubmissionOut
        with user_errors():
            if login is not None:
                with client_for(login) as client:
                    sub = client.submission(submission_id)
                    if follow:
                        try:
                            show_progress(console, sub.events(timeout), True, json_out)
                        except KeyboardInterrupt:
                            stopped_waiting(console, submission_id, "goes on on the server")
                        except TimeoutError:
                            raise FollowTimeout(
                                f"Submission #{submission_id} has not finished after {timeout:.0f} s."
                            ) from None
                    details = sub.result()
            else:
                service = open_service()
                who = _who(user)
                service.submission_status_of(submission_id, who)  # someone else's: refused before following
                if follow:
                    try:
                        show_progress(console, service.follow(submission_id, timeout_s=timeout), True, json_out)
                    except KeyboardInterrupt:
                        stopped_waiting(console, submission_id, "stays queued")
                details = service.submission_details(submission_id, who)
        if json_out:
            print_json(details)
            return
        render_details(console, details)
        if not details.status.done:
            console.print(f"[dim]still running: `kernelcup submissions show {submission_id} --follow`[/]")

    @subs_app.command("code")
    def code_cmd(
        submission_id: int = typer.Argument(..., help="The submission's id."),
        user: str = typer.Option("", "--user", "-u", help=USER_HELP),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output (with its name and hash)."),
        second: bool = typer.Option(False, "--b", help="A compare's second file (B) instead of its first."),
        server: str | None = server_option(),
    ) -> None:
        """Print a submission's code (yours; or a ranked entry's that its problem set made public after the
        deadline); `--b`: a compare's second file."""
        login = resolve(server)
        _local_only(user, login)
        view: SubmissionCodeView | CodeOut
        with user_errors():
            if login is not None:
                with client_for(login) as client:
                    view = client.submission(submission_id).code("b" if second else "a")
            else:
                view = open_service().submission_code(submission_id, _who(user), second=second)
        if json_out:
            print_json(view)
        else:
            sys.stdout.write(view.code if view.code.endswith("\n") else view.code + "\n")

    @subs_app.command("cancel")
    def cancel_cmd(
        submission_id: int = typer.Argument(..., help="The submission's id."),
        user: str = typer.Option("", "--user", "-u", help=USER_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Cancel a submission that is queued or running (a finished one is left as it is: `delete` takes it off the
        rankings)."""
        login = resolve(server)
        _local_only(user, login)
        with user_errors():
            if login is not None:
                with client_for(login) as client:
                    client.submission(submission_id).cancel()
            else:
                open_service().cancel(submission_id, _who(user))
        typer.echo(f"submission #{submission_id} cancelled")

    @subs_app.command("delete")
    def delete_cmd(
        submission_id: int = typer.Argument(..., help="The submission's id."),
        force: bool = typer.Option(False, "--force", "-f", help="Delete without asking."),
        user: str = typer.Option("", "--user", "-u", help=USER_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Take your finished submission off the rankings (one still queued or running is cancelled instead). Shows
        what it deletes and asks first; --force skips the question."""
        login = resolve(server)
        _local_only(user, login)
        with user_errors():
            if login is not None:
                with client_for(login) as client:
                    handle = client.submission(submission_id)
                    if not force:
                        confirm_delete(handle.result().status)
                    action = handle.delete()
            else:
                service = open_service()
                if not force:
                    confirm_delete(service.submission_status_of(submission_id, _who(user)))
                action = service.cancel_or_delete(submission_id, _who(user))
        if action == "cancelled":
            typer.echo(f"submission #{submission_id} was still queued or running: cancelled, not deleted (run this "
                       "again to take it off the rankings)")  # fmt: skip
        else:
            typer.echo(f"submission #{submission_id} deleted: it is off the rankings")


def interactive() -> bool:
    """Whether someone can answer a question: stdin is a terminal."""
    return sys.stdin.isatty()


def confirm_delete(status: SubmissionStatus | SubmissionStatusOut) -> None:
    """Show the submission a delete would take away and ask; refuse where nobody can answer (no terminal)."""
    from rich.console import Console

    console = Console(stderr=True)
    what = "cancel" if not status.done else "delete (take off the rankings)"
    console.print(
        f"about to {what}: [bold]#{status.submission_id}[/] · {safe(status.leaderboard)} · {safe(status.file_name)} "
        f"· {status.mode.value} · sent {format_time(status.created_at)} · "
        + safe("; ".join(job_summary(j) for j in status.jobs))
    )
    if not interactive():
        typer.secho(f"error: nobody here to confirm the delete of #{status.submission_id} (no terminal); add --force "
                    "to delete without asking", fg=typer.colors.RED, err=True)  # fmt: skip
        raise typer.Exit(1)
    if not typer.confirm("Go ahead?", default=False, err=True):
        typer.echo("nothing was deleted", err=True)
        raise typer.Exit(1)
