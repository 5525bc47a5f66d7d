"""Sending replies to interactions, and the one error handler of the command tree.

Every command defers first (ephemerally: Discord's 3-second deadline is met whatever the database
does), so every answer and every error goes out through ``followup``: the first followup completes
the "thinking…" message and keeps its ephemeral flag, which is how errors stay visible only to the
user who made them.
"""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord import app_commands

from bot.limits import DEFAULT_UPLOAD_BYTES, Reply, fit
from leaderboards.errors import KernelcupError, UserError

log = logging.getLogger(__name__)

NOT_YOUR_FAULT = "Something went wrong on our side (not your fault); it has been logged. Please try again in a minute."


class Refused(app_commands.CheckFailure):
    """A check that failed with a message for the user (e.g. not an admin)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def upload_limit(interaction: discord.Interaction) -> int:
    """The largest file this interaction may carry (Discord tells it; boosted servers allow more)."""
    return getattr(interaction, "filesize_limit", None) or DEFAULT_UPLOAD_BYTES


async def defer(interaction: discord.Interaction) -> None:
    """Acknowledge at once (ephemeral 'thinking…'); everything slow happens after this."""
    if not interaction.response.is_done():
        await interaction.response.defer(ephemeral=True, thinking=True)


async def send(
    interaction: discord.Interaction,
    reply: Reply,
    *,
    ephemeral: bool = True,
    overflow_name: str = "message.txt",
    view: discord.ui.View | None = None,
) -> discord.WebhookMessage:
    """Send ``reply`` (fitted to Discord's limits) as a followup of a deferred interaction."""
    reply = fit(reply, upload_limit=upload_limit(interaction), overflow_name=overflow_name)
    kwargs: dict[str, Any] = {"content": reply.content or None, "ephemeral": ephemeral, "wait": True}
    if view is not None:
        kwargs["view"] = view
    if reply.embeds:
        kwargs["embeds"] = list(reply.embeds)
    if reply.files:
        kwargs["files"] = reply.discord_files()
    return await interaction.followup.send(**kwargs)


def error_message(error: BaseException) -> str:
    """What the user reads for an error raised by a command (the core's messages are shown as they are)."""
    if isinstance(error, app_commands.CommandInvokeError):
        error = error.original
    if isinstance(error, Refused):
        return error.message
    if isinstance(error, UserError):
        return error.message
    if isinstance(error, KernelcupError):
        return f"The platform cannot do that right now: {error.message}"
    if isinstance(error, app_commands.NoPrivateMessage):
        return "This command works in a server channel, not in direct messages."
    if isinstance(error, app_commands.CommandOnCooldown):
        return f"Slow down a little: try again in {error.retry_after:.0f} s."
    return NOT_YOUR_FAULT


async def on_tree_error(interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
    """The one handler: a message in the user's words, visible only to them; unexpected errors are logged."""
    message = error_message(error)
    if message == NOT_YOUR_FAULT:
        log.error("command %s failed", getattr(interaction.command, "qualified_name", "?"), exc_info=error)
    try:
        if interaction.response.is_done():
            await interaction.followup.send(message, ephemeral=True)
        else:
            await interaction.response.send_message(message, ephemeral=True)
    except discord.HTTPException:
        log.warning("could not tell the user about an error", exc_info=True)
