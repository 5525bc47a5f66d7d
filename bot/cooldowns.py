"""Command cooldowns per user, so one account cannot flood the bot (and the service behind it) with commands.

Two budgets per user: ``DISCORD_SUBMITS_PER_MINUTE`` for ``/leaderboard submit`` and ``DISCORD_COMMANDS_PER_MINUTE``
for the other ``/leaderboard`` commands together. The buckets live in the bot's context (not in a module global),
so two bots or two tests never share them; the ``/leaderboard`` group spends them in its ``interaction_check``. A
refusal is ``CommandOnCooldown``, which the tree's handler answers with how long to wait. Admin commands have none.
The queue's own limits (submissions per hour, pending jobs) are the core's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands

if TYPE_CHECKING:
    from bot.settings import BotSettings

Budget = Literal["submit", "command"]
WINDOW_S = 60.0


class Cooldowns:
    """Token buckets by (budget, user id)."""

    def __init__(self) -> None:
        self._buckets: dict[tuple[Budget, int], app_commands.Cooldown] = {}

    def retry_after(self, budget: Budget, user_id: int, per_minute: int, now: float) -> float | None:
        """Seconds to wait before this user's next command of ``budget``, or None when it may run now."""
        if per_minute <= 0:
            return None
        for key in [k for k, b in self._buckets.items() if now > b._last + b.per]:
            del self._buckets[key]  # idle buckets: the dict stays as small as the set of active users
        bucket = self._buckets.setdefault((budget, user_id), app_commands.Cooldown(per_minute, WINDOW_S))
        return bucket.update_rate_limit(now)

    def bucket(self, budget: Budget, user_id: int) -> app_commands.Cooldown | None:
        return self._buckets.get((budget, user_id))


def spend(cooldowns: Cooldowns, settings: BotSettings, budget: Budget, interaction: discord.Interaction) -> None:
    """Spend one of the user's ``budget`` commands, or refuse (``CommandOnCooldown``) with the time to wait."""
    per_minute = settings.submits_per_minute if budget == "submit" else settings.commands_per_minute
    retry = cooldowns.retry_after(budget, interaction.user.id, per_minute, interaction.created_at.timestamp())
    if retry is None:
        return
    bucket = cooldowns.bucket(budget, interaction.user.id)
    assert bucket is not None
    raise app_commands.CommandOnCooldown(bucket, retry)
