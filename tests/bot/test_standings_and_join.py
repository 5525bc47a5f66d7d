"""/leaderboard standings and /leaderboard join through SimCord (issue 29): standings with shared ranks, 95% intervals
and held-out coverage, live and final; a private leaderboard that shows only after its invite code."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bot_fakes import accepted, launcher
from bot_steps import GOOD, STATUS_INTERVAL, raised, serve_queue, submit

from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio


async def test_standings_live_then_final_with_ties_and_intervals(world) -> None:
    for member, median in ((world.alice, 20_000), (world.bob, 10_000)):
        world.service.submit(UserRef(member.name, member.id), "k.py", GOOD, "addone", ["cpu"], "ranked")
        await serve_queue(world, launcher(lambda r, m=median: accepted(r, m)))
    live = await world.alice.slash(world.channel, "leaderboard standings", leaderboard="addone", device="cpu")
    text = live.response.content
    assert "**addone** on **cpu**: Live standings" in text
    rows = text.split("```")[1].strip().splitlines()
    assert rows[1].split()[:2] == ["1", "bob"] and rows[2].split()[:2] == ["2", "alice"]
    early = await world.alice.slash(world.channel, "leaderboard standings", leaderboard="addone", final=True)
    assert "has no final standings on cpu yet" in early.response.content  # and on H100: each device says so

    world.service.update_leaderboard("addone", deadline=world.service.clock() - timedelta(minutes=1), force=True)
    assert world.service.competition_tick() == [
        "addone: froze the final standings on cpu", "addone: froze the final standings on H100"]  # fmt: skip
    final = await world.alice.slash(world.channel, "leaderboard standings", leaderboard="addone", final=True)
    text = final.response.content
    assert "**addone** on **cpu**: Final standings, frozen <t:" in text and "No entries." in text  # H100: none
    rows = text.split("```")[1].strip().splitlines()
    assert rows[0].split() == ["#", "user", "score", "95%", "interval", "held-out"]
    assert rows[1].split()[:4] == ["1", "bob", "10.0", "µs"] and "–" in rows[1]  # the interval's range
    assert raised(world) == []


async def test_a_private_board_shows_after_join(world) -> None:
    world.service.update_leaderboard("addone", visible=False)
    hidden = await world.alice.slash(world.channel, "leaderboard list")
    assert "addone" not in hidden.response.content
    code = world.service.create_invite("addone", actor="admin", uses=1).code
    wrong = await world.alice.slash(world.channel, "leaderboard join", code="kci_nope")
    assert wrong.ephemeral and "unknown" in wrong.response.content
    joined = await world.alice.slash(world.channel, "leaderboard join", code=code)
    assert joined.ephemeral and "You're in. **addone** shows" in joined.response.content
    listed = await world.alice.slash(world.channel, "leaderboard list")
    assert "**addone**" in listed.response.content
    shown = await world.alice.slash(world.channel, "leaderboard standings", leaderboard="addone", device="cpu")
    assert "Live standings" in shown.response.content and "No entries yet." in shown.response.content
    other = await world.bob.slash(world.channel, "leaderboard show", leaderboard="addone")
    assert "There is no leaderboard named 'addone'" in other.response.content
    used = await world.bob.slash(world.channel, "leaderboard join", code=code)
    assert "all it allows" in used.response.content
    assert [type(e).__name__ for e in raised(world)] == ["InviteError", "LeaderboardNotFound", "InviteError"]


async def test_a_private_boards_submission_status_is_for_its_author_only(world) -> None:
    world.service.update_leaderboard("addone", visible=False)
    code = world.service.create_invite("addone", actor="admin", uses=1).code
    await world.alice.slash(world.channel, "leaderboard join", code=code)
    result = await submit(world, world.alice, mode="ranked", device="cpu")
    [status] = result.followups
    assert status.ephemeral and status.content.startswith("**Submission #1**")  # not posted for the channel
    await serve_queue(world)
    await world.env.advance_time(STATUS_INTERVAL)
    assert result.followups[0].ephemeral and "rank **#1**" in result.followups[0].content


def test_a_timed_held_out_figure_shows_beside_the_coverage_and_never_a_case() -> None:
    from datetime import UTC, datetime

    from bot.standings import standings_text
    from leaderboards.competition import StandingRow, StandingsView

    row = StandingRow(1, False, "ann", 7, "k.py", 900.0, 850.0, 950.0, "3 of 3 held-out cases", holdout_ns=12_300.0)
    untimed = StandingRow(2, False, "bob", 8, "k.py", 990.0, 900.0, 1100.0, "3 of 3 held-out cases")
    view = StandingsView("addone", "cpu", True, datetime(2031, 1, 1, tzinfo=UTC), (row, untimed))
    rows = standings_text(view).split("```")[1].strip().splitlines()
    assert rows[1].endswith("3 of 3 held-out cases, timed 12.3 µs")
    assert rows[2].endswith("3 of 3 held-out cases")
