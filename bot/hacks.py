"""``/leaderboard hack``: an input hack against a board (issue 35, ``leaderboards/board_hacks.py``). The reply, like
every reply of the bot, is ephemeral: the case (which becomes a held-out case where it breaks an entry) is seen by
its sender only, and the reply never repeats it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bot.reports import safe
from leaderboards.hack_space import HackField
from leaderboards.hacks import HackRefused
from leaderboards.results import UserRef

if TYPE_CHECKING:
    from leaderboards.service import LeaderboardService


def hack_reply(service: LeaderboardService, user: UserRef, leaderboard: str, case: str) -> str:
    """Queue the hack ``case`` (JSON text) against ``leaderboard``: blocking, call it in a thread."""
    try:
        parsed = json.loads(case)
    except json.JSONDecodeError as exc:
        raise HackRefused(
            f'the case is not JSON ({exc.msg} at character {exc.pos}); write it like {{"rows": 3, "seed": 5}}',
            [HackField("case", "is not JSON")],
        ) from None
    views = service.submit_hack(user, leaderboard, parsed)
    lines = [f"Hack #{v.hack_id} against **{safe(v.leaderboard)}** on **{v.device}**: queued." for v in views]
    lines.append(
        "A worker runs the reference on it, then the top entries (correctness only) when no one's job waits; "
        "`kernelcup hack show ID` or `GET /api/v1/hacks/ID` tells you which entries it broke."
    )
    return "\n".join(lines)
