"""/leaderboard hack through SimCord (issue 35): an input hack against a board, queued from Discord. The reply is
ephemeral and never repeats the case; a case out of range is refused naming its field; text that is not JSON too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bot_steps import raised
from helpers import future

from leaderboards.hacks import HackRefused
from leaderboards.problems import load_problem
from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parents[1] / "leaderboards" / "hack_fixture"


async def test_a_hack_from_discord_is_queued_and_a_bad_one_refused(world, tmp_path: Path) -> None:
    folder = tmp_path / "hackable" / "triple"
    folder.mkdir(parents=True)
    for rel in ("reference.py", "task.yml"):
        shutil.copy(FIXTURE / rel, folder / rel)
    world.service.create_leaderboard(load_problem(folder), deadline=future(), devices=["cpu"])
    case = json.dumps({"rows": 3, "cols": 33, "seed": 5})
    sent = await world.alice.slash(world.channel, "leaderboard hack", leaderboard="triple", case=case)
    text = sent.response.content
    assert sent.ephemeral and "Hack #1 against **triple** on **cpu**: queued." in text
    assert "33" not in text  # the reply never repeats the case
    (hack,) = world.service.my_hacks(UserRef(world.alice.name, world.alice.id), "triple")
    assert (hack.hack_id, hack.status) == (1, "queued")

    far = json.dumps({"rows": 1000, "cols": 3, "seed": 1})
    refused = await world.alice.slash(world.channel, "leaderboard hack", leaderboard="triple", case=far)
    assert refused.ephemeral and "rows: 1000 is outside 1 .. 256" in refused.response.content
    garbled = await world.alice.slash(world.channel, "leaderboard hack", leaderboard="triple", case="{rows: 3")
    assert "the case is not JSON" in garbled.response.content
    assert [type(e) for e in raised(world)] == [HackRefused, HackRefused]
