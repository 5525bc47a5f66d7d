"""Announcements of a new #1 / top 3 in the configured channel: once each, across restarts, despite Discord errors."""

from __future__ import annotations

import pytest
from bot_fakes import accepted, launcher
from bot_steps import GOOD, serve_queue

from bot.client import KernelcupBot
from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio

INTERVAL = 30.0


async def ranked(world, member, median_ns: float) -> int:
    receipt = world.service.submit(UserRef(member.name, member.id), "kernel.py", GOOD, "addone", ["cpu"], "ranked")
    await serve_queue(world, launcher(lambda r: accepted(r, median_ns)))
    return receipt.submission_id


@pytest.fixture
async def announcing(world):
    """The world's bot restarted with an announcement channel (its id exists only once the guild does)."""
    channel = world.guild.create_text_channel("announcements")
    world.bot.settings.announce_channel_id = channel.id
    world.bot.settings.announce_interval_s = INTERVAL
    await world.env.restart_bot(KernelcupBot(world.service, world.bot.settings))
    return channel


def texts(channel) -> list[str]:
    return [m.content for m in channel.history()]


async def test_new_first_place_is_announced_once_across_restarts(world, announcing) -> None:
    first = await ranked(world, world.alice, 20_000)
    await world.env.advance_time(INTERVAL)
    assert texts(announcing) == [
        f"🏆 New #1 on **addone** (cpu)! {world.alice.mention} moves to #1 with **20.0 µs** · submission #{first}"
    ]
    await world.env.advance_time(INTERVAL * 2)
    await world.env.restart_bot(KernelcupBot(world.service, world.bot.settings))
    await world.env.advance_time(INTERVAL * 2)
    assert len(texts(announcing)) == 1  # nothing twice, neither from the loop nor after the restart

    second = await ranked(world, world.bob, 10_000)
    await world.env.advance_time(INTERVAL)
    assert texts(announcing)[-1] == (
        f"🏆 New #1 on **addone** (cpu)! {world.bob.mention} moves to #1 with **10.0 µs** · submission #{second}"
    )


async def test_top_three_and_a_personal_improvement(world, announcing) -> None:
    await ranked(world, world.alice, 10_000)
    third = await ranked(world, world.bob, 30_000)
    better = await ranked(world, world.bob, 20_000)  # not better than alice: no new rank, no announcement
    await world.env.advance_time(INTERVAL)
    lines = texts(announcing)
    assert len(lines) == 2
    assert lines[1] == (
        f"🎉 New top 3 on **addone** (cpu): {world.bob.mention} moves to #2 with **30.0 µs** · submission #{third}"
    )
    assert world.service.ranking("addone", "cpu").entries[1].submission_id == better


async def test_a_failed_message_is_sent_again_later_not_lost(world, announcing) -> None:
    world.env.inject_error("POST", f"/channels/{announcing.id}/messages", status=503, times=1)
    await ranked(world, world.alice, 20_000)
    await world.env.advance_time(INTERVAL)
    assert texts(announcing) == []
    await world.env.advance_time(INTERVAL)
    assert len(texts(announcing)) == 1 and "New #1" in texts(announcing)[0]


async def test_no_channel_configured_announces_nothing_and_claims_nothing(world) -> None:
    await ranked(world, world.alice, 20_000)
    await world.env.advance_time(INTERVAL * 3)
    # Left in the database for a bot that has a channel.
    assert len(world.service.claim_announcements("test")) == 1
