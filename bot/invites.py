"""What ``/admin invite-create``, ``/admin invites``, ``/admin invite-revoke`` and ``/admin members`` say (issue 29):
invite codes to hidden leaderboards and who joined them. A code appears in one reply only, the ephemeral answer to the
admin who made it; lists name an invite by its number and prefix, never its code."""

from __future__ import annotations

from collections.abc import Sequence

from bot.reports import safe, timestamp
from leaderboards.invites import InviteView, MemberView, NewInvite, member_via

LIST_LINE_CHARS = 120


def invite_line(invite: InviteView) -> str:
    expires = f"expires {timestamp(invite.expires_at)}" if invite.expires_at else "never expires"
    state = f", withdrawn {timestamp(invite.revoked_at)}" if invite.revoked_at else ""
    return (f"#{invite.invite_id} **{safe(invite.leaderboard)}** `{invite.prefix}…` used {invite.uses} of "
            f"{invite.max_uses}, {expires}{state}")  # fmt: skip


def new_invite_text(new: NewInvite) -> str:
    """The code, shown this once and only to the admin who made it (the reply is ephemeral)."""
    return (
        f"Invite {invite_line(new.invite)}. The code is shown only now and only to you (only its hash is kept):\n"
        f"```\n{new.code}\n```\n"
        "Send it to whom you invite: they run `/leaderboard join code:…`, `kernelcup join CODE`, or /join on the "
        "site. `/admin invite-revoke` withdraws it."
    )


def invites_text(invites: Sequence[InviteView], leaderboard: str | None) -> str:
    if not invites:
        where = f" to **{safe(leaderboard)}**" if leaderboard else ""
        return f"No invite codes{where}. `/admin invite-create` makes one."
    return "**Invite codes** (newest first; never a code)\n" + "\n".join(invite_line(i) for i in invites)


def member_line(member: MemberView) -> str:
    via = member_via(member.invite_id, member.invite_prefix)
    return (f"**{safe(member.user_name)}** (`{safe(member.user, LIST_LINE_CHARS)}`) joined "
            f"{timestamp(member.joined_at)}, {via}")  # fmt: skip


def members_text(leaderboard: str, members: Sequence[MemberView]) -> str:
    if not members:
        return f"**{safe(leaderboard)}** has no members: only admins see it. `/admin invite-create` makes a code."
    head = f"**{safe(leaderboard)}**: {len(members)} member{'s' if len(members) != 1 else ''} (earliest first)"
    return head + "\n" + "\n".join(member_line(m) for m in members)
