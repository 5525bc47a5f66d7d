"""/admin moderate, /admin audit and /admin rejudge through SimCord (issue 29): admins only, one service call each,
the answer in words; the audit log's reply withholds secrets."""

from __future__ import annotations

import pytest
from bot_steps import raised, serve_queue
from sqlalchemy import select

from bot.commands.admin import NOT_ADMIN
from bot.replies import Refused
from leaderboards.models import Leaderboard
from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio


async def ranked(world) -> int:
    sid = world.service.submit(UserRef("carol"), "k.py", b"def custom_kernel(d):\n    return d\n", "addone", ["cpu"],
                               "ranked").submission_id  # fmt: skip
    await serve_queue(world)
    return int(sid)


async def test_an_admin_quarantines_and_clears_an_entry(world) -> None:
    sid = await ranked(world)
    done = await world.admin.slash(world.channel, "admin moderate", submission_id=sid, state="quarantined",
                                   reason="reads the expected output")  # fmt: skip
    assert done.ephemeral
    assert done.response.content == (
        f"Submission #{sid} of **carol** on **addone** is now **quarantined**: reads the expected output"
    )
    assert world.service.ranking("addone", "cpu").entries == ()
    wrong = await world.admin.slash(world.channel, "admin moderate", submission_id=sid, state="flagged", reason="x")
    assert "can become hacked or cleared, not flagged" in wrong.response.content
    raised(world)
    await world.admin.slash(world.channel, "admin moderate", submission_id=sid, state="cleared", reason="fine")
    assert [e.submission_id for e in world.service.ranking("addone", "cpu").entries] == [sid]


async def test_the_audit_reply_lists_acts_filtered_and_without_secrets(world) -> None:
    sid = await ranked(world)
    await world.admin.slash(world.channel, "admin moderate", submission_id=sid, state="flagged", reason="odd timings")
    await world.admin.slash(world.channel, "admin pause", leaderboard="addone")
    page = await world.admin.slash(world.channel, "admin audit", action="moderate")
    text = page.response.content
    assert text.startswith("**Audit log** (newest first)")
    assert f"moderate submission:{sid}" in text and "odd timings" in text and "pause" not in text
    everything = (await world.admin.slash(world.channel, "admin audit", leaderboard="addone")).response.content
    assert "pause addone" in everything and f"submission:{sid}" in everything
    with world.service.db.transaction() as s:
        seed = s.scalar(select(Leaderboard.secret_seed).where(Leaderboard.name == "addone"))
    assert "create_leaderboard addone" in everything and str(seed) not in everything
    none = await world.admin.slash(world.channel, "admin audit", by="nobody")
    assert none.response.content == "No audit entries match."


async def test_an_admin_rejudges_a_board(world) -> None:
    sid = await ranked(world)
    done = await world.admin.slash(world.channel, "admin rejudge", leaderboard="addone", top=3)
    assert "**addone**: queued 1 rejudges" in done.response.content and f"carol #{sid} (cpu)" in done.response.content
    again = await world.admin.slash(world.channel, "admin rejudge", leaderboard="addone")
    assert "nothing queued" in again.response.content


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("admin moderate", {"submission_id": 1, "state": "hacked", "reason": "x"}),
        ("admin audit", {}),
        ("admin rejudge", {"leaderboard": "addone"}),
    ],
)
async def test_everyone_else_is_refused(world, command, options) -> None:
    result = await world.alice.slash(world.channel, command, **options)
    assert result.response.content == NOT_ADMIN
    assert [type(e) for e in raised(world)] == [Refused]
    assert world.service.rejudges("addone") == ()


async def test_the_author_reads_why_in_leaderboard_mine(world) -> None:
    sid = world.service.submit(UserRef("alice", world.alice.id), "k.py", b"def custom_kernel(d):\n    return d\n",
                               "addone", ["cpu"], "ranked").submission_id  # fmt: skip
    await serve_queue(world)
    await world.admin.slash(world.channel, "admin moderate", submission_id=sid, state="quarantined",
                            reason="reads the expected output")  # fmt: skip
    mine = await world.alice.slash(world.channel, "leaderboard mine", leaderboard="addone")
    assert "quarantined: out of every ranking while a moderator looks: reads the expected output" in (
        mine.response.content)  # fmt: skip
