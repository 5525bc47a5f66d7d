"""/leaderboard submit's license option (issue 34): Discord offers the licences as choices, and the one chosen is the
submission's archive licence; left out, the submission's licence is none."""

from __future__ import annotations

import discord
import pytest
from bot_steps import GUILD_ID, submit

from leaderboards.licences import CHOICES
from leaderboards.models import SubmissionLicence

pytestmark = pytest.mark.anyio


async def test_the_license_option_sets_the_archive_licence(world) -> None:
    group = world.bot.tree.get_command("leaderboard", guild=discord.Object(GUILD_ID))
    command = group.get_command("submit")
    assert [c.value for c in command.get_parameter("license").choices] == list(CHOICES)
    chosen = await submit(world, world.alice, license="CC-BY-4.0")
    plain = await submit(world, world.alice, file=("other.py", b"def custom_kernel(d):\n    return d + 0\n"))
    assert chosen.response.content.startswith("Submission #1 received")
    assert plain.response.content.startswith("Submission #2 received")
    with world.service.db.transaction() as s:
        rows = {r.submission_id: r.licence for r in s.query(SubmissionLicence)}
    assert rows == {1: "CC-BY-4.0"}  # no row: none, never published
