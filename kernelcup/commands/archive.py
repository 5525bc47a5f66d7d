"""`kernelcup archive export|policy|license|withdraw|account`: the open archive (issue 34, docs/archive.md) on this
machine's configured database. `export` writes the published entries as Parquet files with a manifest; `policy` says
when a board publishes (an operator's command); `license`, `withdraw` and `account` are an author's, on the local
database (through a server: the API's `PUT /api/v1/submissions/{id}/license` and `PUT /api/v1/me/archive`)."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import typer

from kernelcup.commands.common import open_service, print_json, user_errors

archive_app = typer.Typer(help="The open kernel archive: export it, and who publishes what.", no_args_is_help=True)


def _shell_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return f"uid {os.getuid()}"


def register(app: typer.Typer) -> None:
    app.add_typer(archive_app, name="archive")


@archive_app.command("export")
def export_cmd(
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="The folder to write entries.parquet, cases.parquet and "
        "manifest.json to (created if missing; an earlier export's files are replaced).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
) -> None:
    """Export every published kernel (licensed by its author, its board's publication time passed, not withdrawn) as
    Parquet files whose schema docs/archive.md describes. The same database gives byte-identical files."""
    from leaderboards.archive_export import export_archive

    with user_errors():
        service = open_service()
        summary = export_archive(service.archive_all(), out)
    if json_out:
        print_json(summary.manifest)
        return
    typer.echo(f"exported {summary.entries} entries ({summary.cases} benchmark cases) to {summary.directory}")


@archive_app.command("policy")
def policy_cmd(
    leaderboard: str = typer.Argument(..., help="The leaderboard."),
    at_once: bool = typer.Option(
        ...,
        "--at-once/--after-deadline",
        help="Publish licensed kernels as they run (practice boards), or after the "
        "deadline (the default of every board).",
    ),
) -> None:
    """When a leaderboard's licensed kernels are published (audited)."""
    with user_errors():
        open_service().set_archive_policy(leaderboard, at_once=at_once, actor=f"shell:{_shell_user()} (kernelcup)")
    when = "as they run" if at_once else "after its deadline"
    typer.echo(f"{leaderboard}: licensed kernels are published {when}")


@archive_app.command("license")
def license_cmd(
    submission_id: int = typer.Argument(..., min=1, help="Your submission's id."),
    licence: str = typer.Argument(..., help="none, CC0-1.0, CC-BY-4.0, MIT or Apache-2.0."),
    user: str = typer.Option("", "--user", "-u", help="Local database only: act as this local user."),
) -> None:
    """Choose the archive licence of one of your submissions (changeable until it is published)."""
    from leaderboards.results import UserRef

    with user_errors():
        view = open_service().set_submission_licence(submission_id, UserRef(user or _shell_user()), licence)
    when = f", published from {view.publishes_at:%Y-%m-%d %H:%M} UTC" if view.publishes_at else ""
    typer.echo(f"#{view.submission_id}: {view.licence}{when}")


@archive_app.command("withdraw")
def withdraw_cmd(
    submission_id: int = typer.Argument(..., min=1, help="Your submission's id."),
    user: str = typer.Option("", "--user", "-u", help="Local database only: act as this local user."),
) -> None:
    """Take one of your submissions out of the archive and every later export."""
    from leaderboards.results import UserRef

    with user_errors():
        view = open_service().withdraw_from_archive(submission_id, UserRef(user or _shell_user()))
    typer.echo(f"#{view.submission_id}: withdrawn from the archive")


@archive_app.command("account")
def account_cmd(
    default_license: str | None = typer.Option(
        None,
        "--default-license",
        help="The licence of your submissions that name none (none, CC0-1.0, CC-BY-4.0, MIT, Apache-2.0).",
    ),
    name: str | None = typer.Option(
        None, "--name", help="How the archive names you: '' anonymous, '-' your leaderboard name."
    ),
    user: str = typer.Option("", "--user", "-u", help="Local database only: act as this local user."),
) -> None:
    """Show, or change, your archive settings: the default licence and the name the archive gives you."""
    from leaderboards.results import UserRef

    who = UserRef(user or _shell_user())
    with user_errors():
        service = open_service()
        if default_license is None and name is None:
            view = service.archive_account(who)
        else:
            view = service.set_archive_account(who, default_licence=default_license, author_name=name)
    if view.author_name is None:
        shown = "your leaderboard name"
    else:
        shown = repr(view.author_name) if view.author_name else "anonymous"
    typer.echo(f"default licence: {view.default_licence}; named as: {shown}")
    if view.author_name == "":
        typer.echo(
            "note: the archive names no author, but a ranked entry's number and score are public on its board's "
            "rankings under your leaderboard name (docs/archive.md)"
        )
