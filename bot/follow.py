"""The live status message: follow one submission and keep its message up to date, then show the report.

One follower per submission polls ``submission_status`` (progress events land in the database, written
by whichever worker runs the job, in this process or another) and edits the message only when the text
changed, at most once per ``status_interval_s``: Discord rate-limits message edits. When every job has
finished it replaces the status with the final report and attaches logs and profiles.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import discord

from bot.calls import call
from bot.limits import Reply, fit
from bot.reports import report, status_text
from leaderboards.errors import UserError
from leaderboards.results import UserRef

if TYPE_CHECKING:
    from bot.client import KernelcupBot

log = logging.getLogger(__name__)

INVALID_WEBHOOK_TOKEN = 50027
"""Discord's code once an interaction's token (15 minutes) has expired: its messages can't be edited any more."""


class StatusMessage:
    """A message to keep editing: the interaction's followup, then (after its token expired) a channel message."""

    def __init__(self, message: discord.WebhookMessage | discord.Message, upload_limit: int) -> None:
        self.message = message
        self.upload_limit = upload_limit

    async def show(self, reply: Reply, *, overflow_name: str = "message.txt") -> None:
        reply = fit(reply, upload_limit=self.upload_limit, overflow_name=overflow_name)
        kwargs = {"content": reply.content, "embeds": list(reply.embeds)}
        if reply.files:
            kwargs["attachments"] = reply.discord_files()
        try:
            self.message = await self.message.edit(**kwargs) or self.message
        except discord.HTTPException as exc:
            if exc.code != INVALID_WEBHOOK_TOKEN and exc.status != 401:
                raise
            # The interaction is older than 15 minutes: continue in a new message of the bot's own.
            channel = self.message.channel
            if not isinstance(channel, discord.abc.Messageable):
                raise
            files = reply.discord_files()
            self.message = await channel.send(content=reply.content, embeds=list(reply.embeds), files=files)


async def follow_submission(
    bot: KernelcupBot, submission_id: int, user: UserRef, status_message: StatusMessage, shown: str | None = None
) -> None:
    """Edit ``status_message`` (now showing ``shown``) as the submission moves, then show its final report."""
    settings = bot.settings
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + settings.follow_timeout_s
    while True:
        status = await call(bot.service.submission_status, submission_id)
        if status.done:
            break
        text = status_text(status)
        if text != shown:
            await status_message.show(Reply(content=text))
            shown = text
        if loop.time() >= give_up_at:
            await status_message.show(
                Reply(content=text + f"\n(Stopped following it here: see `/leaderboard submission {submission_id}`.)")
            )
            return
        await asyncio.sleep(settings.status_interval_s)
    try:
        details = await call(bot.service.submission_details, submission_id, user)
    except UserError:  # deleted by an admin while it ran: the status says so
        await status_message.show(Reply(content=status_text(status)))
        return
    await status_message.show(report(details, bot.peak_for), overflow_name=f"report-{submission_id}.txt")
