"""/token: an API token for the Discord user's own account, shown only to them, that the API accepts."""

from __future__ import annotations

import re

import pytest
from bot_steps import raised

from leaderboards.errors import InvalidChange
from leaderboards.results import Scope, UserRef

pytestmark = pytest.mark.anyio


async def test_token_is_private_and_speaks_for_the_discord_account(world) -> None:
    world.bot.settings.api_url = "https://kc.example.org"
    result = await world.alice.slash(world.channel, "token")
    assert result.ephemeral
    text = result.response.content
    token = re.search(r"```\n(kc_\S+)\n```", text).group(1)  # type: ignore[union-attr]
    assert "kernelcup login --server https://kc.example.org" in text and "shown only now" in text
    who = world.service.authenticate(token)
    assert who.user == UserRef("alice", world.alice.id) and who.scopes == {Scope.SUBMIT} and who.expires_at
    # The same account as their Discord submissions: one user row whatever the surface.
    assert world.service.user(UserRef("alice", world.alice.id)).identity == f"discord:{world.alice.id}"
    [listed] = world.service.list_tokens(UserRef("alice", world.alice.id))
    assert listed.token_id == who.token_id and token not in repr(listed)


async def test_token_lifetime(world) -> None:
    short = await world.bob.slash(world.channel, "token", expires="12h")
    assert short.ephemeral and "expires <t:" in short.response.content
    never = await world.bob.slash(world.channel, "token", expires="never")
    assert never.ephemeral and "A token from Discord expires" in never.response.content
    assert [type(e) for e in raised(world)] == [InvalidChange]
