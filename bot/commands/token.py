"""``/token``: an API token for the kernelcup CLI and HTTP API, in a reply only its user sees.

The token belongs to the same account as the Discord user (one user row whatever the surface), with the submit
scope; admin tokens are made on the server (``kernelcup tokens create NAME --admin``).
"""

from __future__ import annotations

import discord
from discord import app_commands

from bot.calls import bot_of, call, user_ref
from bot.limits import Reply
from bot.replies import defer, send
from bot.reports import token_text
from leaderboards.accounts import parse_expiry
from leaderboards.errors import InvalidChange
from leaderboards.results import Scope


@app_commands.command(name="token", description="Get an API token for the kernelcup CLI and API (only you see it)")
@app_commands.describe(expires="How long it lasts: 90d (default), 12h, 2w, …")
async def token_command(interaction: discord.Interaction, expires: str | None = None) -> None:
    await defer(interaction)  # ephemeral: the reply, with the token, is visible to this user only
    lifetime = parse_expiry(expires) if expires else None
    if expires and lifetime is None:
        raise InvalidChange("A token from Discord expires; give a lifetime like 90d or 365d.", field="expires")
    bot = bot_of(interaction)
    new = await call(
        bot.service.create_token,
        user_ref(interaction),
        name="discord /token",
        scopes=(Scope.SUBMIT,),
        expires_in=lifetime,
        actor=user_ref(interaction).identity,
    )
    await send(interaction, Reply(content=token_text(new, bot.settings.api_url)))
