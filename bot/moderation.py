"""What ``/admin moderate``, ``/admin audit`` and ``/admin rejudge`` say (issue 29): the service's answers in words."""

from __future__ import annotations

from collections.abc import Sequence

import discord

from bot.reports import quiet, safe, timestamp
from leaderboards.audit import AuditPage
from leaderboards.moderation import ModerationView
from leaderboards.rejudge import RejudgeView

AUDIT_LINE_CHARS = 180


def moderation_text(view: ModerationView) -> str:
    return (
        f"Submission #{view.submission_id} of **{discord.utils.escape_markdown(safe(view.user_name))}** on "
        f"**{safe(view.leaderboard)}** is now **{view.state}**: {quiet(view.reason)}"
    )


def audit_text(page: AuditPage) -> str:
    """One line per entry in a code block (what actors and reasons say stays text), newest first."""
    if not page.entries:
        return "No audit entries match."
    lines = [safe(e.text, AUDIT_LINE_CHARS) for e in page.entries]
    more = f"\nOlder entries: before:{page.next_before}" if page.next_before is not None else ""
    return "**Audit log** (newest first)\n```\n" + "\n".join(lines) + "\n```" + more


def rejudge_text(leaderboard: str, queued: Sequence[RejudgeView]) -> str:
    if not queued:
        return f"**{safe(leaderboard)}**: nothing queued (no ranked entries, or each is already queued)."
    who = ", ".join(f"{safe(r.user_name)} #{r.submission_id} ({r.device})" for r in queued)
    when = timestamp(queued[0].created_at)
    return (
        f"**{safe(leaderboard)}**: queued {len(queued)} rejudges {when}, below everyone's submissions: {who}. "
        "Their scores stay; `kernelcup leaderboard rejudges` shows the drift."
    )
