"""Announcements of a new #1 or a new top-3 entry on a device, in the configured channel.

The rank changes are recorded by the core in the same transaction as the run that caused them, and
``claim_announcements`` hands each one out once (it marks them in the database as it hands them out),
so a restarted bot, or two bots on one database, never announce a change twice. A message Discord refuses
is tried again in the next rounds (``MAX_TRIES``); only a bot killed between the claim and the message
loses that one announcement (the service has no "release" to hand it back).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

import discord

from bot.calls import call
from bot.limits import MESSAGE_CHARS, cut
from bot.reports import announcement_text

if TYPE_CHECKING:
    from bot.client import KernelcupBot
    from leaderboards.results import RankChangeView

log = logging.getLogger(__name__)


def claimer_name() -> str:
    return f"bot@{socket.gethostname()}:{os.getpid()}"


MAX_TRIES = 5
"""Rounds a claimed change is tried before it is given up (logged): a passing Discord error loses nothing."""


@dataclass
class Unsent:
    """A claimed change whose message failed, and how often it did."""

    change: RankChangeView
    tries: int = 0


async def announce_once(
    bot: KernelcupBot, channel: discord.abc.Messageable, backlog: list[Unsent] | None = None
) -> int:
    """Post every rank change not announced yet; return how many were posted.

    ``backlog`` holds changes claimed earlier whose message failed (Discord down, rate limit); they go first
    and stay there, up to ``MAX_TRIES`` rounds, until their message is out.
    """
    backlog = backlog if backlog is not None else []
    claimed = await call(bot.service.claim_announcements, claimer_name())
    todo = [*backlog, *(Unsent(change) for change in claimed)]
    backlog.clear()
    posted = 0
    for item in todo:
        text = cut(announcement_text(item.change), MESSAGE_CHARS)
        try:
            await channel.send(text, allowed_mentions=discord.AllowedMentions(users=True, roles=False, everyone=False))
        except discord.HTTPException:
            item.tries += 1
            if item.tries < MAX_TRIES:
                backlog.append(item)
                log.warning(
                    "could not announce rank change %s (try %d); trying again", item.change.change_id, item.tries
                )
            else:
                log.exception("gave up announcing rank change %s after %d tries", item.change.change_id, item.tries)
        else:
            posted += 1
    return posted


async def announce_loop(bot: KernelcupBot) -> None:
    """Look for rank changes every ``announce_interval_s`` for the bot's lifetime."""
    await bot.wait_until_ready()
    channel_id = bot.settings.announce_channel_id
    assert channel_id is not None
    channel = bot.get_channel(channel_id)
    if not isinstance(channel, discord.abc.Messageable):
        log.error("DISCORD_ANNOUNCE_CHANNEL_ID=%s is not a text channel the bot can see; no announcements", channel_id)
        return
    backlog: list[Unsent] = []
    while not bot.is_closed():
        try:
            await announce_once(bot, channel, backlog)
        except Exception:
            log.exception("announcements failed; trying again in %.0f s", bot.settings.announce_interval_s)
        await asyncio.sleep(bot.settings.announce_interval_s)
