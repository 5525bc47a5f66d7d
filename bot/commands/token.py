"""``/token``: an API token for the kernelcup CLI and HTTP API, in a reply only its user sees.

The token belongs to the same account as the Discord user (one user row whatever the surface), with the submit
scope; admin tokens are made on the server (``kernelcup tokens create NAME --admin``).
"""

from __future__ import annotations

import discord
from discord import app_commands

from bot.calls import call, user_ref
from bot.context import BotContext
from bot.limits import Reply
from bot.replies import defer, send
from bot.reports import token_text
from leaderboards.accounts import parse_expiry
from leaderboards.errors import InvalidChange
from leaderboards.results import Scope


def token_command(ctx: BotContext) -> app_commands.Command:  # type: ignore[type-arg]
    """The ``/token`` command on ``ctx``'s service."""

    @app_commands.command(name="token", description="Get an API token for the kernelcup CLI and API (only you see it)")
    @app_commands.describe(expires="How long it lasts: 90d (default), 12h, 2w, …")
    async def token(interaction: discord.Interaction, expires: str | None = None) -> None:
        await defer(interaction)  # ephemeral: the reply, with the token, is visible to this user only
        lifetime = parse_expiry(expires) if expires else None
        if expires and lifetime is None:
            raise InvalidChange("A token from Discord expires; give a lifetime like 90d or 365d.", field="expires")
        new = await call(
            ctx.service.create_token,
            user_ref(interaction),
            name="discord /token",
            scopes=(Scope.SUBMIT,),
            expires_in=lifetime,
            actor=user_ref(interaction).identity,
        )
        await send(interaction, Reply(content=token_text(new, ctx.settings.api_url)))

    return token
