"""``/leaderboard standings``: a device's live or final standings as a fixed-width table (issue 29): rank (``2=`` where
tied), user, score, the 95% interval (final standings), held-out coverage ("5 of 5 held-out cases") and a late entry's
note; who was left out. Counts of held-out cases only, never a case. And what ``/admin retime`` and ``/admin retiming``
say (the finalists re-timed side by side, ``leaderboards/retiming.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.reports import NAME_CHARS, safe, timestamp
from leaderboards.errors import NotFound
from leaderboards.formatting import format_ns, format_range
from leaderboards.holdout import held_out_text
from leaderboards.results import UserRef

if TYPE_CHECKING:
    from leaderboards.competition import StandingsView
    from leaderboards.retiming import RetimeQueued, RetimingView
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
            rows.append(f"{shown}  {held_out_text(r.coverage, r.holdout_ns) or '–'}")
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


def retime_queued_text(name: str, queued: Sequence[RetimeQueued]) -> str:
    """``/admin retime``: what was queued on which machines."""
    if not queued:
        return f"**{safe(name)}**: nothing to re-time (no device has two ranked entries)."
    lines = []
    for q in queued:
        where = ", ".join(f"`{safe(w, 60)}`" for w in q.workers) or "whichever worker comes (none is alive now)"
        lines.append(f"**{safe(q.leaderboard)}** on **{q.device}**: queued {q.rounds} interleaved rounds of "
                     f"{len(q.entries)} entries, spread over {where}.")  # fmt: skip
    return "\n".join(lines) + " `/admin retiming` shows the result."


def retiming_text(view: RetimingView) -> str:
    """``/admin retiming``: pooled scores, intervals and ranks (``2=`` where tied), and each machine's figure."""
    plural = "s" if view.machines != 1 else ""
    head = (f"**{view.leaderboard}** on **{view.device}**: re-timed, {view.done} of {view.rounds} rounds on "
            f"{view.machines} machine{plural}; `=` marks entries the paired compare cannot tell apart")  # fmt: skip
    if not view.rows:
        return head + "\nNothing ranked yet (two rounds at least must have run)."
    rows = [f"{'#':>4}  {'user':<{NAME_CHARS}}  {'score':>10}  {'95% interval':<19}"]
    for r in view.rows:
        rank = f"{r.rank}=" if r.tied else str(r.rank)
        rows.append(f"{rank:>4}  {safe(r.user_name):<{NAME_CHARS}}  {format_ns(r.score_ns):>10}  "
                    f"{format_range(r.low_ns, r.high_ns):<19}")  # fmt: skip
    lines = [head, "```\n" + "\n".join(rows) + "\n```"]
    for r in view.rows:
        figures = "; ".join(f"{safe(m.machine, 60)} {format_ns(m.score_ns)} ({m.rounds})" for m in r.machines)
        lines.append(f"#{r.rank} {safe(r.user_name)}: {figures}")
    lines += [f"#{sid}: a run failed in some round (not ranked here)" for sid in view.failed]
    return "\n".join(lines)
