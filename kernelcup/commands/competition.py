"""After the deadline and private boards (issue 29), locally or through a server's API (``kernelcup.remote``):

- `kernelcup join CODE`: join a hidden leaderboard with an invite code;
- `kernelcup leaderboard late NAME`: its "after the deadline" list (practice submissions, in no standings);
- `kernelcup leaderboard admit ID --reason WHY`: an admin lets one late ranked entry in as ranked;
- `kernelcup invites create NAME|list|revoke ID`: an admin's invite codes (a code is printed once; only its hash is
  kept);
- `kernelcup invites members NAME|add NAME USER|remove NAME USER`: who is in a hidden leaderboard, and by which invite
  (or an admin's hand); an admin lets someone in without a code, or takes a member out.

Through a server the token decides who joins and whether the admin commands are allowed; on the local database
``--user`` (default: your login name) joins, and the admin commands are audited as the shell user.
"""

from __future__ import annotations

import getpass
import os
from typing import TYPE_CHECKING

import typer

from kernelcup.commands.common import format_time, open_service, print_json, user_errors
from kernelcup.commands.text import safe
from kernelcup.remote import client_for, resolve, server_option

if TYPE_CHECKING:
    from leaderboards.invites import InviteView, Joined, MemberView, NewInvite
    from leaderboards.late import LateEntry, LatePage
    from web.routes.invites import InviteOut, JoinedOut, MemberOut, NewInviteOut
    from web.routes.late import LateEntryOut, LatePageOut


def _actor(command: str) -> str:
    """Who runs an admin command on the server's own database, for the audit log."""
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        who = f"uid {os.getuid()}"
    return f"shell:{who} (kernelcup {command})"


def _leaderboard_group(app: typer.Typer) -> typer.Typer:
    for group in app.registered_groups:
        if group.name == "leaderboard" and group.typer_instance is not None:
            return group.typer_instance
    raise RuntimeError("register kernelcup.commands.leaderboard before kernelcup.commands.competition")


def late_lines(page: LatePage | LatePageOut) -> list[str]:
    from leaderboards.formatting import format_ns, outcome_text

    lines = [f"{safe(page.leaderboard)}: {page.total} submitted after the deadline ({format_time(page.deadline)}); "
             "practice ranks nowhere unless an admin admitted it"]  # fmt: skip
    for e in page.entries:
        jobs = ", ".join(
            f"{safe(j.device)} {outcome_text(j.status, j.verdict)} {format_ns(j.ranked_score_ns or j.score_ns)}"
            for j in e.jobs
        )
        lines.append(f"  #{e.submission_id} {safe(e.user_name)} {safe(e.file_name)} {e.mode} "
                     f"{format_time(e.created_at)}: {jobs} [{safe(e.note)}]")  # fmt: skip
    return lines


def invite_line(invite: InviteView | InviteOut) -> str:
    expires = format_time(invite.expires_at) if invite.expires_at else "never"
    state = f", withdrawn {format_time(invite.revoked_at)}" if invite.revoked_at else ""
    return (f"#{invite.invite_id} {safe(invite.leaderboard)} {invite.prefix}… used {invite.uses} of "
            f"{invite.max_uses}, expires {expires}{state}")  # fmt: skip


def member_line(member: MemberView | MemberOut) -> str:
    from leaderboards.invites import member_via

    via = member_via(member.invite_id, member.invite_prefix)
    return f"{safe(member.user_name)} ({safe(member.user)}) joined {format_time(member.joined_at)}, {via}"


def register(app: typer.Typer) -> None:
    lb_app = _leaderboard_group(app)

    @app.command("join")
    def join_cmd(
        code: str = typer.Argument(..., help="The invite code the organisers gave you (kci_…)."),
        user: str = typer.Option("", "--user", "-u", help="Local database only: who joins (default: your login)."),
        server: str | None = server_option(),
    ) -> None:
        """Join a private (hidden) leaderboard with an invite code: it then shows to you as a public one does."""
        from leaderboards.results import UserRef

        login = resolve(server)
        if login is not None and user:
            raise typer.BadParameter("a server knows you by your token; --user is for the local database")
        with user_errors():
            joined: Joined | JoinedOut
            if login is not None:
                with client_for(login) as client:
                    joined = client.join(code)
            else:
                joined = open_service().join(UserRef(user or getpass.getuser()), code)
        again = "you were in it already" if joined.already else "you're in"
        typer.echo(f"{safe(joined.leaderboard)}: {again}; it shows in `kernelcup leaderboard list` for you now.")

    @lb_app.command("late")
    def late_cmd(
        name: str = typer.Argument(..., help="The leaderboard."),
        limit: int = typer.Option(50, "--limit", "-n", min=1, max=200, help="How many, newest first."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """The submissions made after a leaderboard's deadline: unranked practice, in no standings (unless an admin
        admitted one), with their status and score."""
        login = resolve(server)
        with user_errors():
            page: LatePage | LatePageOut
            if login is not None:
                with client_for(login) as client:
                    page = client.late(name, limit=limit)
            else:
                page = open_service().late_submissions(name, limit=limit)
        if json_out:
            print_json(page)
            return
        typer.echo("\n".join(late_lines(page)))

    @lb_app.command("admit")
    def admit_cmd(
        submission_id: int = typer.Argument(..., min=1, help="The late ranked submission."),
        reason: str = typer.Option(..., "--reason", help="Why it is let in: shown with the entry."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """Admin: let one submission made after the deadline in as ranked ("late, admitted by you because REASON").
        Final standings frozen without it are made again with it. Audited."""
        login = resolve(server)
        with user_errors():
            entry: LateEntry | LateEntryOut
            if login is not None:
                with client_for(login) as client:
                    entry = client.admit(submission_id, reason)
            else:
                entry = open_service().admit_late(submission_id, actor=_actor("leaderboard admit"), reason=reason)
        if json_out:
            print_json(entry)
            return
        typer.echo(f"#{entry.submission_id} by {safe(entry.user_name)} on {safe(entry.leaderboard)}: "
                   f"{safe(entry.note)}")  # fmt: skip

    invites_app = typer.Typer(help="Invite codes to private (hidden) leaderboards (admins).", no_args_is_help=True)
    app.add_typer(invites_app, name="invites")

    @invites_app.command("create")
    def create_cmd(
        name: str = typer.Argument(..., help="The hidden leaderboard."),
        uses: int = typer.Option(1, "--uses", min=1, max=10_000, help="How many users may join with it."),
        days: float = typer.Option(7.0, "--days", min=0.001, max=366, help="How long it stays valid."),
        never: bool = typer.Option(False, "--never-expires", help="Valid until withdrawn."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """Make an invite code and print it: it is shown this once (only its hash is kept)."""
        from datetime import timedelta

        login = resolve(server)
        with user_errors():
            new: NewInvite | NewInviteOut
            if login is not None:
                with client_for(login) as client:
                    new = client.create_invite(name, uses=uses, expires_days=None if never else days)
            else:
                new = open_service().create_invite(
                    name, actor=_actor("invites create"), uses=uses, expires_in=None if never else timedelta(days=days)
                )
        if json_out:
            print_json(new)
            return
        typer.echo(f"{invite_line(new.invite)}. The code is shown only now: send it to whom you invite "
                   "(they run `kernelcup join CODE`, or /leaderboard join in Discord, or /join on the site).",
                   err=True)  # fmt: skip
        typer.echo(new.code)

    @invites_app.command("list")
    def list_cmd(
        name: str | None = typer.Argument(None, help="Only this leaderboard's."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """The invite codes, newest first: their prefix, uses and expiry (never a code)."""
        login = resolve(server)
        with user_errors():
            invites: list[InviteOut] | tuple[InviteView, ...]
            if login is not None:
                with client_for(login) as client:
                    invites = client.invites(name)
            else:
                invites = open_service().list_invites(name)
        if json_out:
            print_json(invites)
            return
        typer.echo("\n".join(invite_line(i) for i in invites) or "no invite codes")

    @invites_app.command("revoke")
    def revoke_cmd(
        invite_id: int = typer.Argument(..., min=1, help="The invite's number (#N in `kernelcup invites list`)."),
        server: str | None = server_option(),
    ) -> None:
        """Withdraw a code: nobody else joins with it (those who joined stay in)."""
        login = resolve(server)
        with user_errors():
            invite: InviteView | InviteOut
            if login is not None:
                with client_for(login) as client:
                    invite = client.revoke_invite(invite_id)
            else:
                invite = open_service().revoke_invite(invite_id, actor=_actor("invites revoke"))
        typer.echo(invite_line(invite))

    @invites_app.command("members")
    def members_cmd(
        name: str = typer.Argument(..., help="The hidden leaderboard."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """Who is in a hidden leaderboard, earliest first, and how: by which invite (its number and prefix), or added
        by an admin. Admins only."""
        login = resolve(server)
        with user_errors():
            members: list[MemberOut] | tuple[MemberView, ...]
            if login is not None:
                with client_for(login) as client:
                    members = client.members(name)
            else:
                members = open_service().board_members(name)
        if json_out:
            print_json(members)
            return
        lines = [member_line(m) for m in members]
        typer.echo("\n".join(lines) or f"{safe(name)} has no members: only admins see it (invite people with "
                   f"`kernelcup invites create {safe(name)}`)")  # fmt: skip

    @invites_app.command("add")
    def add_cmd(
        name: str = typer.Argument(..., help="The hidden leaderboard."),
        user: str = typer.Argument(..., help="discord:ID or a local name."),
        reason: str = typer.Option("", "--reason", help="Why: the audit log keeps it."),
        server: str | None = server_option(),
    ) -> None:
        """Let a user into a hidden leaderboard without a code (audited). Admins only."""
        from leaderboards.results import UserRef

        login = resolve(server)
        with user_errors():
            member: MemberView | MemberOut
            if login is not None:
                with client_for(login) as client:
                    member = client.add_member(name, user, reason=reason)
            else:
                member = open_service().add_member(name, UserRef.parse(user), actor=_actor("invites add"),
                                                   reason=reason)  # fmt: skip
        typer.echo(member_line(member))

    @invites_app.command("remove")
    def remove_cmd(
        name: str = typer.Argument(..., help="The hidden leaderboard."),
        user: str = typer.Argument(..., help="The member: discord:ID or a local name (as `invites members` shows)."),
        reason: str = typer.Option("", "--reason", help="Why: the audit log keeps it."),
        server: str | None = server_option(),
    ) -> None:
        """Take a member out of a hidden leaderboard: it is hidden from them again (their submissions stay). Audited.
        Admins only."""
        from leaderboards.results import UserRef

        login = resolve(server)
        with user_errors():
            member: MemberView | MemberOut
            if login is not None:
                with client_for(login) as client:
                    member = client.remove_member(name, user, reason=reason)
            else:
                member = open_service().remove_member(name, UserRef.parse(user), actor=_actor("invites remove"),
                                                      reason=reason)  # fmt: skip
        typer.echo(f"Removed: {member_line(member)}")
