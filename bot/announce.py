"""Announcements of a new #1 or a new top-3 entry on a device, in the configured channel.

The rank changes are recorded by the core in the same transaction as the run that caused them, and
``claim_announcements`` hands each one out once (it marks them in the database as it hands them out),
so a restarted bot, or two bots on one database, never announce a change twice. A message Discord refuses
is tried again an interval later, up to ``MAX_TRIES`` times (the platform's retry policy, ``runners.retry``); only
a bot stopped between the claim and the message loses that announcement (the service has no "release" to hand it
back).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

import discord

from bot.calls import call
from bot.limits import MESSAGE_CHARS, cut
from bot.reports import announcement_text
from runners.retry import aretrying

if TYPE_CHECKING:
    from bot.context import BotContext
    from leaderboards.results import RankChangeView

log = logging.getLogger(__name__)


def claimer_name() -> str:
    return f"bot@{socket.gethostname()}:{os.getpid()}"


MAX_TRIES = 5
"""Tries of a claimed change's message, one announcement interval apart, before it is given up (logged): a passing
Discord error loses nothing."""


async def post_changes(channel: discord.abc.Messageable, changes: Sequence[RankChangeView], interval_s: float) -> int:
    """Post claimed changes in order; a message Discord refuses is tried again every ``interval_s`` on the platform's
    retry policy, up to ``MAX_TRIES`` tries. Returns how many were posted."""
    posted = 0
    for change in changes:
        text = cut(announcement_text(change), MESSAGE_CHARS)
        policy = aretrying(
            retry_if=lambda exc: isinstance(exc, discord.HTTPException),
            what=f"announcing rank change {change.change_id}",
            first_s=interval_s,
            max_s=interval_s,
            attempts=MAX_TRIES,
            log=log,
        )
        try:
            await policy(
                channel.send, text, allowed_mentions=discord.AllowedMentions(users=True, roles=False, everyone=False)
            )
        except discord.HTTPException:
            log.exception("gave up announcing rank change %s after %d tries", change.change_id, MAX_TRIES)
        else:
            posted += 1
    return posted


async def announce_loop(client: discord.Client, ctx: BotContext) -> None:
    """Look for rank changes every ``announce_interval_s`` for the client's lifetime. Each round's changes are posted
    by a task of their own, so a message being retried never holds up the next round's claim."""
    await client.wait_until_ready()
    channel_id = ctx.settings.announce_channel_id
    assert channel_id is not None
    channel = client.get_channel(channel_id)
    if not isinstance(channel, discord.abc.Messageable):
        log.error("DISCORD_ANNOUNCE_CHANNEL_ID=%s is not a text channel the bot can see; no announcements", channel_id)
        return
    interval = ctx.settings.announce_interval_s
    posting: set[asyncio.Task[int]] = set()
    try:
        while not client.is_closed():
            try:
                claimed = await call(ctx.service.claim_announcements, claimer_name())
            except Exception:
                log.exception("announcements failed; trying again in %.0f s", interval)
            else:
                if claimed:
                    task = asyncio.create_task(post_changes(channel, claimed, interval))
                    posting.add(task)
                    task.add_done_callback(posting.discard)
            await asyncio.sleep(interval)
    finally:
        for task in posting:
            task.cancel()
