"""The live status message: follow one submission and keep its message up to date, then report to its author.

One follower per submission polls the core's progress follower (``leaderboards.events.Follower``: progress
events land in the database, written by whichever worker runs the job, in this process or another), re-renders
``submission_status`` when something changed, and edits the message only when the text changed, at most once per
``status_interval_s``: Discord rate-limits message edits.

The status message is public, so it carries status, verdict, score and rank only. When every job has finished,
the full report (failing tests, benchmarks, messages that may quote the competitor's code, logs and profiles) goes
to its author alone (``AuthorChannel``: the submission's private thread, else a message only they can see, else a
direct message), and the public message ends with where the author finds it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, cast

import discord

from bot.calls import call
from bot.limits import Reply, fit
from bot.reports import public_report, report, status_text
from leaderboards.errors import UserError
from leaderboards.results import SubmissionStatus, UserRef

if TYPE_CHECKING:
    from bot.context import BotContext

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
        try:
            if reply.files:
                edited = await self.message.edit(content=reply.content, embeds=list(reply.embeds),
                                                 attachments=reply.discord_files())  # fmt: skip
            else:
                edited = await self.message.edit(content=reply.content, embeds=list(reply.embeds))
            self.message = edited or self.message
        except discord.HTTPException as exc:
            if exc.code not in (INVALID_WEBHOOK_TOKEN, UNKNOWN_MESSAGE, UNKNOWN_WEBHOOK) and exc.status != 401:
                raise
            # The interaction is older than 15 minutes, or the message was deleted: continue in a new message.
            channel = self.message.channel
            if not isinstance(channel, discord.abc.Messageable):
                raise
            files = reply.discord_files()
            self.message = await channel.send(content=reply.content, embeds=list(reply.embeds), files=files)


class AuthorChannel:
    """Where a submission's details go: its private thread when there is one, else a followup of the submitting
    interaction that only its author sees (possible for 15 minutes), else a direct message."""

    def __init__(
        self, interaction: discord.Interaction, upload_limit: int, thread: discord.Thread | None = None
    ) -> None:
        self.interaction = interaction
        self.upload_limit = upload_limit
        self.thread = thread

    async def send(self, reply: Reply, *, overflow_name: str) -> str | None:
        """Send ``reply`` to the author; a sentence for the public message saying where it went (None: nowhere)."""
        reply = fit(reply, upload_limit=self.upload_limit, overflow_name=overflow_name)
        content, embeds = reply.content or None, list(reply.embeds)
        if self.thread is not None:
            try:
                await self.thread.send(content=content, embeds=embeds, files=reply.discord_files())
                return f"Report and logs for its author: {self.thread.mention}"
            except discord.HTTPException as exc:
                log.warning("could not post to the private thread %s: %s", self.thread.id, exc)
        if not self.interaction.is_expired():
            try:
                # (None, as for the other two: the stubs say str, discord.py sends no content for it)
                await self.interaction.followup.send(content=cast(str, content), embeds=embeds,
                                                     files=reply.discord_files(), ephemeral=True)  # fmt: skip
                return "Report and logs went to its author (only they can see them)."
            except discord.HTTPException as exc:
                log.info("could not send the report privately through the interaction: %s", exc)
        try:
            await self.interaction.user.send(content=content, embeds=embeds, files=reply.discord_files())
            return "Report and logs went to its author by direct message."
        except discord.HTTPException as exc:
            log.info("could not send the report by direct message: %s", exc)
        return None


async def _show(status_message: StatusMessage, reply: Reply, submission_id: int, **kwargs: str) -> bool:
    """Show ``reply``; a passing Discord error is logged and reported as False (the next round tries again)."""
    try:
        await status_message.show(reply, **kwargs)
    except discord.HTTPException as exc:
        log.warning("could not update the status of submission %s: %s", submission_id, exc)
        return False
    return True


async def follow_submission(
    ctx: BotContext,
    submission_id: int,
    user: UserRef,
    status_message: StatusMessage,
    shown: str | None = None,
    author: AuthorChannel | None = None,
) -> None:
    """Edit ``status_message`` (now showing ``shown``) as the submission moves; at the end send the report to
    ``author`` and end the public message with its verdicts and where the author finds the rest.

    A database or Discord hiccup skips one round (the next poll tries again) rather than ending the follower;
    after ``follow_timeout_s`` it stops and says where to look.
    """
    settings = ctx.settings
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + settings.follow_timeout_s
    delivered: str | None = None
    follower = ctx.service.follower(submission_id)
    behind = True  # the message may not show the latest state (a change not rendered yet, or a failed edit)
    while True:
        status = None
        try:
            progress = await call(follower.poll)  # the one progress follower: only a change is worth a re-render
            behind = behind or bool(progress.updates) or progress.done
            if behind:
                status = await call(ctx.service.submission_status, submission_id)
        except Exception:
            log.exception("could not read the status of submission %s; trying again", submission_id)
        if status is not None and status.done:
            if delivered is None:
                delivered = await _deliver(ctx, submission_id, user, status, author)
            if delivered is not None and await _show(
                status_message, Reply(content=public_report(status, delivered)), submission_id
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


async def _deliver(
    ctx: BotContext, submission_id: int, user: UserRef, status: SubmissionStatus, author: AuthorChannel | None
) -> str | None:
    """Send the finished submission's report to its author; the public message's last line, or None on a
    hiccup (the next round tries again)."""
    lookup = f"Its author sees the details with `/leaderboard submission {submission_id}`."
    if status.deleted or author is None:
        return lookup
    try:
        details = await call(ctx.service.submission_details, submission_id, user)
    except UserError:  # deleted by an admin while it ran: the status says so
        return lookup
    except Exception:
        log.exception("could not read the results of submission %s; trying again", submission_id)
        return None
    where = await author.send(report(details), overflow_name=f"report-{submission_id}.txt")
    return f"{where} {lookup}" if where else lookup
