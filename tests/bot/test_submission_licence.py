"""/submission license and /submission withdraw through SimCord (issue 34): an author's archive consent from Discord,
through the same service calls as the web's PUT /submissions/{id}/license and POST …/license/withdraw: the author
only, changeable until published, withdrawable after; every reply only its user sees."""

from __future__ import annotations

import discord
import pytest
from bot_steps import GUILD_ID, raised, submit

from leaderboards.licences import CHOICES
from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio


def _alice(world) -> UserRef:
    return UserRef(world.alice.name, world.alice.id)


async def test_the_author_chooses_a_licence_until_published_then_withdraws(world) -> None:
    group = world.bot.tree.get_command("submission", guild=discord.Object(GUILD_ID))
    assert [c.value for c in group.get_command("license").get_parameter("license").choices] == list(CHOICES)
    await submit(world, world.alice)
    chosen = await world.alice.slash(world.channel, "submission license", submission_id=1, license="MIT")
    assert chosen.ephemeral
    assert chosen.response.content.startswith("Submission #1: licence MIT. It will be published in the open archive")
    assert "/submission withdraw" in chosen.response.content
    view = world.service.submission_licence(1, _alice(world))
    assert (view.licence, view.published, view.withdrawn) == ("MIT", False, False)

    changed = await world.alice.slash(world.channel, "submission license", submission_id=1, license="CC-BY-4.0")
    assert "licence CC-BY-4.0" in changed.response.content
    world.service.set_archive_policy("addone", at_once=True, actor="admin")  # a practice board: published now
    assert world.service.submission_licence(1, _alice(world)).published
    refused = await world.alice.slash(world.channel, "submission license", submission_id=1, license="MIT")
    assert refused.ephemeral
    assert "published under CC-BY-4.0" in refused.response.content and "Withdraw it" in refused.response.content
    assert world.service.submission_licence(1, _alice(world)).licence == "CC-BY-4.0"

    withdrawn = await world.alice.slash(world.channel, "submission withdraw", submission_id=1)
    assert withdrawn.ephemeral and "withdrawn from the archive" in withdrawn.response.content
    view = world.service.submission_licence(1, _alice(world))
    assert (view.withdrawn, view.published) == (True, False)
    again = await world.alice.slash(world.channel, "submission license", submission_id=1, license="CC0-1.0")
    assert "Submission #1: licence CC0-1.0. It is published in the open archive." in again.response.content
    assert [type(e).__name__ for e in raised(world)] == ["InvalidChange"]


async def test_only_the_author_and_only_a_licensed_entry(world) -> None:
    await submit(world, world.alice)
    other = await world.bob.slash(world.channel, "submission license", submission_id=1, license="CC0-1.0")
    assert other.ephemeral and "#1" in other.response.content and "licence" not in other.response.content
    taken = await world.bob.slash(world.channel, "submission withdraw", submission_id=1)
    assert "#1" in taken.response.content
    assert world.service.submission_licence(1, _alice(world)).licence == "none"  # bob changed nothing
    unlicensed = await world.alice.slash(world.channel, "submission withdraw", submission_id=1)
    assert "has the licence 'none': it is not in the archive" in unlicensed.response.content
    missing = await world.alice.slash(world.channel, "submission license", submission_id=99, license="MIT")
    assert "#99" in missing.response.content
    assert [type(e).__name__ for e in raised(world)] == [
        "SubmissionNotFound", "SubmissionNotFound", "InvalidChange", "SubmissionNotFound"]  # fmt: skip
