"""The bridge from the event loop to the blocking service, and who is asking."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import discord

from leaderboards.results import UserRef

T = TypeVar("T")


async def call(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a blocking service function in a worker thread, so the event loop keeps answering Discord."""
    return await asyncio.to_thread(fn, *args, **kwargs)


def user_ref(user: discord.abc.User | discord.Interaction) -> UserRef:
    """The service's name for a Discord user: their snowflake is the identity, their name is for display."""
    if isinstance(user, discord.Interaction):
        user = user.user
    return UserRef(name=user.name, discord_id=user.id)
