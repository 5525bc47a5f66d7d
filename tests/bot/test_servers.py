"""Who the bot serves and who is an admin, through SimCord with two servers: ours (``GUILD_ID``, configured) and
one that anybody could make, with a role named like ours."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import discord
import pytest
import simcord
from bot_steps import ADMIN_ROLE, GUILD_ID, raised

from bot.client import NOT_HERE, KernelcupBot
from bot.commands.admin import NOT_ADMIN
from bot.replies import Refused
from bot.settings import BotSettings
from leaderboards.service import LeaderboardService

pytestmark = pytest.mark.anyio

OTHER_ID = 1_200_000_000_000_000_002


@asynccontextmanager
async def started(bot: KernelcupBot, before_start=lambda env: None) -> AsyncIterator[simcord.Env]:
    """``simcord.run``, with a chance to set up the world before the bot logs in."""
    env = simcord.Env(bot)
    before_start(env)
    await env.start()
    try:
        with env.time_context():
            yield env
    finally:
        await env.shutdown()


async def test_a_role_named_like_the_admin_role_is_not_it(world) -> None:
    impostor_role = world.guild.create_role(ADMIN_ROLE)  # same name, another id
    mallory = world.guild.add_member(world.env.create_user("mallory"), roles=[impostor_role])
    result = await mallory.slash(world.channel, "admin pause", leaderboard="addone")
    assert result.response.content == NOT_ADMIN
    assert not world.service.leaderboard("addone").paused
    assert await mallory.autocomplete(world.channel, "admin pause", "leaderboard", "") == []
    assert [type(e) for e in raised(world)] == [Refused]


async def test_the_bot_leaves_a_server_it_is_added_to(world) -> None:
    other = world.env.create_guild("mallory's server", id=OTHER_ID)
    await world.env.settle()
    assert world.bot.get_guild(OTHER_ID) is None and world.bot.get_guild(GUILD_ID) is not None
    assert OTHER_ID not in world.env.backend.guilds
    assert any(
        r.method == "DELETE" and r.path.endswith(f"/users/@me/guilds/{other.id}") for r in world.env.http_requests
    )


async def test_in_a_server_it_could_not_leave_no_command_exists_and_stale_ones_are_refused(world) -> None:
    world.env.inject_error("DELETE", "/users/@me/guilds/*", status=403, code=50013, message="Missing Permissions")
    other = world.env.create_guild("mallory's server", id=OTHER_ID)
    channel = other.create_text_channel("general")
    role = other.create_role(ADMIN_ROLE)
    role_by_id = other.create_role("by id")
    world.bot.settings.admin_role_ids.append(role_by_id.id)  # even a configured role id counts only in our server
    mallory = other.add_member(world.env.create_user("mallory"), roles=[role, role_by_id])
    await world.env.settle()
    assert world.bot.get_guild(OTHER_ID) is not None  # leaving failed (logged)
    assert mallory.available_commands(channel) == ()  # commands are synced to our server only

    # Commands an old deployment synced there (or globally) are refused by the bot itself.
    tree = world.bot.tree
    payloads = [
        {k: v for k, v in c.to_dict(tree).items() if k != "nsfw"}
        for c in tree.get_commands(guild=discord.Object(GUILD_ID))
    ]
    world.env.backend.register_commands(OTHER_ID, payloads)
    result = await mallory.slash(channel, "admin pause", leaderboard="addone")
    assert result.ephemeral and result.response.content == NOT_HERE
    listed = await mallory.slash(channel, "leaderboard list")
    assert listed.response.content == NOT_HERE
    assert await mallory.autocomplete(channel, "leaderboard submit", "leaderboard", "") == []
    assert not world.service.leaderboard("addone").paused
    assert [type(e) for e in raised(world)] == [Refused, Refused]


async def test_commands_go_to_the_served_server_only_and_stale_global_ones_are_removed(
    service: LeaderboardService, bot_settings: BotSettings
) -> None:
    def before(env: simcord.Env) -> None:
        env.create_guild("kernels", id=GUILD_ID)
        env.create_guild("mallory's server", id=OTHER_ID)
        # What a version that synced globally left behind.
        env.backend.register_commands(None, [{"name": "admin", "description": "old", "type": 1}])

    async with started(KernelcupBot(service, bot_settings), before) as env:
        assert env.backend.commands.get(None, {}) == {}
        served = {name for name, _type in env.backend.commands[GUILD_ID]}
        assert served == {"leaderboard", "admin", "token", "submission"}
        assert OTHER_ID not in env.backend.commands
        assert OTHER_ID not in env.backend.guilds  # it left the server it found at start
        assert env.backend.guilds[GUILD_ID]


async def test_competitor_commands_are_not_offered_in_direct_messages(world) -> None:
    user = world.env.create_user("dana")
    assert user.available_commands() == ()


async def test_messages_mention_nobody_unless_they_say_so(world) -> None:
    await world.alice.slash(world.channel, "leaderboard list")
    sent = [r.json for r in world.env.http_requests if isinstance(r.json, dict) and "content" in r.json]
    assert sent
    assert all(p.get("allowed_mentions") == {"parse": []} for p in sent), sent
