"""The live status message: follow one submission and keep its message up to date, then show the report.

One follower per submission polls the core's progress follower (``leaderboards.events.Follower``: progress
events land in the database, written by whichever worker runs the job, in this process or another), re-renders
``submission_status`` when something changed, and edits the message only when the text changed, at most once per
``status_interval_s``: Discord rate-limits message edits. When every job has
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
from leaderboards.results import SubmissionStatus, UserRef

if TYPE_CHECKING:
    from bot.client import KernelcupBot

log = logging.getLogger(__name__)

INVALID_WEBHOOK_TOKEN = 50027
"""Discord's code once an interaction's token (15 minutes) has expired: its messages can't be edited any more."""
UNKNOWN_MESSAGE = 10008
"""The message is gone (deleted by a moderator or the user): the status continues in a new one."""
UNKNOWN_WEBHOOK = 10015


class StatusMessage:
    """A message to keep editing: the interaction's followup, then (once it can't be edited) a channel message."""

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
            if exc.code not in (INVALID_WEBHOOK_TOKEN, UNKNOWN_MESSAGE, UNKNOWN_WEBHOOK) and exc.status != 401:
                raise
            # The interaction is older than 15 minutes, or the message was deleted: continue in a new message.
            channel = self.message.channel
            if not isinstance(channel, discord.abc.Messageable):
                raise
            files = reply.discord_files()
            self.message = await channel.send(content=reply.content, embeds=list(reply.embeds), files=files)


async def _show(status_message: StatusMessage, reply: Reply, submission_id: int, **kwargs: str) -> bool:
    """Show ``reply``; a passing Discord error is logged and reported as False (the next round tries again)."""
    try:
        await status_message.show(reply, **kwargs)
    except discord.HTTPException as exc:
        log.warning("could not update the status of submission %s: %s", submission_id, exc)
        return False
    return True


async def follow_submission(
    bot: KernelcupBot, submission_id: int, user: UserRef, status_message: StatusMessage, shown: str | None = None
) -> None:
    """Edit ``status_message`` (now showing ``shown``) as the submission moves, then show its final report.

    A database or Discord hiccup skips one round (the next poll tries again) rather than ending the follower;
    after ``follow_timeout_s`` it stops and says where to look.
    """
    settings = bot.settings
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + settings.follow_timeout_s
    follower = bot.service.follower(submission_id)
    behind = True  # the message may not show the latest state (a change not rendered yet, or a failed edit)
    while True:
        status = None
        try:
            progress = await call(follower.poll)  # the one progress follower: only a change is worth a re-render
            behind = behind or bool(progress.updates) or progress.done
            if behind:
                status = await call(bot.service.submission_status, submission_id)
        except Exception:
            log.exception("could not read the status of submission %s; trying again", submission_id)
        if status is not None and status.done:
            final = await _final_reply(bot, submission_id, user, status)
            if final is not None and await _show(
                status_message, final, submission_id, overflow_name=f"report-{submission_id}.txt"
            ):
                return
        elif status is not None:
            text = status_text(status)
            if text == shown or await _show(status_message, Reply(content=text), submission_id):
                shown, behind = text, False
        if loop.time() >= give_up_at:
            note = f"(Stopped following it here: see `/leaderboard submission {submission_id}`.)"
            await _show(status_message, Reply(content=f"{shown}\n{note}" if shown else note), submission_id)
            return
        await asyncio.sleep(settings.status_interval_s)


async def _final_reply(bot: KernelcupBot, submission_id: int, user: UserRef, status: SubmissionStatus) -> Reply | None:
    """The report of a finished submission (its status alone if an admin deleted it meanwhile); None on a hiccup."""
    try:
        details = await call(bot.service.submission_details, submission_id, user)
    except UserError:  # deleted by an admin while it ran: the status says so
        return Reply(content=status_text(status))
    except Exception:
        log.exception("could not read the results of submission %s; trying again", submission_id)
        return None
    return report(details, bot.peak_for)
