"""``/leaderboard standings``: a device's live or final standings as a fixed-width table (issue 29): rank (``2=`` where
tied), user, score, the 95% interval (final standings), held-out coverage ("5 of 5 held-out cases") and a late entry's
note; who was left out. Counts of held-out cases only, never a case."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.reports import NAME_CHARS, safe, timestamp
from leaderboards.errors import NotFound
from leaderboards.formatting import format_ns, format_range
from leaderboards.results import UserRef

if TYPE_CHECKING:
    from leaderboards.competition import StandingsView
    from leaderboards.service import LeaderboardService


def standings_text(view: StandingsView) -> str:
    kind = "Final standings" if view.final else "Live standings"
    head = f"**{view.leaderboard}** on **{view.device}**: {kind}"
    if view.final and view.frozen_at is not None:
        head += f", frozen {timestamp(view.frozen_at)}; `=` marks entries that cannot be told apart"
    if not view.rows:
        lines = [head, "No entries yet." if not view.final else "No entries."]
    else:
        interval = f"  {'95% interval':<19}" if view.final else ""
        rows = [f"{'#':>4}  {'user':<{NAME_CHARS}}  {'score':>10}{interval}  held-out"]
        for r in view.rows:
            rank = f"{r.rank}=" if r.tied else str(r.rank)
            shown = f"{rank:>4}  {safe(r.user_name):<{NAME_CHARS}}  {format_ns(r.score_ns):>10}"
            if view.final:
                shown += f"  {format_range(r.low_ns, r.high_ns) if r.low_ns and r.high_ns else '':<19}"
            rows.append(f"{shown}  {r.coverage or '–'}")
        lines = [head, "```\n" + "\n".join(rows) + "\n```"]
        lines += [f"#{r.rank} {safe(r.user_name)}: {r.note}" for r in view.rows if r.note]
    lines += [f"Left out: {safe(e.user_name)} (#{e.submission_id}), {e.coverage}" for e in view.excluded]
    return "\n".join(lines)


def standings_reply(
    service: LeaderboardService, name: str, devices: list[str] | None, final: bool, viewer: UserRef
) -> str:
    """The standings of each device (every device of the leaderboard when None): blocking, call it in a thread. A
    device without final standings yet says so instead of failing the others."""
    devices = devices or list(service.leaderboard(name, viewer=viewer).devices)
    parts = []
    for device in devices:
        try:
            parts.append(standings_text(service.standings(name, device, final=final, viewer=viewer)))
        except NotFound as exc:
            if not final:
                raise
            parts.append(exc.message)
    return "\n\n".join(parts)
