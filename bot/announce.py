"""Announcements of a new #1 or a new top-3 entry on a device, in the configured channel.

The rank changes are recorded by the core in the same transaction as the run that caused them, and
``claim_announcements`` hands each one out once (it marks them in the database as it hands them out),
so a restarted bot, or two bots on one database, never announce a change twice.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from typing import TYPE_CHECKING

import discord

from bot.calls import call
from bot.limits import cut
from bot.reports import announcement_text

if TYPE_CHECKING:
    from bot.client import KernelcupBot

log = logging.getLogger(__name__)


def claimer_name() -> str:
    return f"bot@{socket.gethostname()}:{os.getpid()}"


async def announce_once(bot: KernelcupBot, channel: discord.abc.Messageable) -> int:
    """Post every rank change not announced yet; return how many were posted."""
    changes = await call(bot.service.claim_announcements, claimer_name())
    for change in changes:
        text = cut(announcement_text(change), 2000)
        try:
            await channel.send(text, allowed_mentions=discord.AllowedMentions(users=True, roles=False, everyone=False))
        except discord.HTTPException:
            # Claimed means it won't be handed out again: say which one was lost rather than repeat it later.
            log.exception("could not announce rank change %s", change.change_id)
    return len(changes)


async def announce_loop(bot: KernelcupBot) -> None:
    """Look for rank changes every ``announce_interval_s`` for the bot's lifetime."""
    await bot.wait_until_ready()
    channel_id = bot.settings.announce_channel_id
    assert channel_id is not None
    channel = bot.get_channel(channel_id)
    if not isinstance(channel, discord.abc.Messageable):
        log.error("DISCORD_ANNOUNCE_CHANNEL_ID=%s is not a text channel the bot can see; no announcements", channel_id)
        return
    while not bot.is_closed():
        try:
            await announce_once(bot, channel)
        except Exception:
            log.exception("announcements failed; trying again in %.0f s", bot.settings.announce_interval_s)
        await asyncio.sleep(bot.settings.announce_interval_s)
