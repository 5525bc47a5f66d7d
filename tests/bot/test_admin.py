"""/admin through SimCord: the role guard, and each command's one change, said in words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from bot_steps import raised, serve_queue, submit

from bot.commands.admin import NOT_ADMIN
from bot.replies import Refused
from leaderboards.errors import InvalidChange, LeaderboardNotFound, UserNotFound
from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio

REFUSAL = NOT_ADMIN


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("admin pause", {"leaderboard": "addone"}),
        ("admin delete", {"leaderboard": "addone", "confirm": "addone"}),
        ("admin sync", {}),
        ("admin rate-limit", {"leaderboard": "addone", "per_hour": 1}),
        ("admin stats", {}),
    ],
)
async def test_everyone_else_is_refused_politely_and_nothing_happens(world, command, options) -> None:
    result = await world.alice.slash(world.channel, command, **options)
    assert result.ephemeral
    assert result.response.content == REFUSAL
    board = world.service.leaderboard("addone")
    assert not board.paused and board.rate_limit_per_hour is None
    assert [type(e) for e in raised(world)] == [Refused]


async def test_ban_by_a_non_admin_bans_nobody(world) -> None:
    result = await world.alice.slash(world.channel, "admin ban", user=world.bob, reason="spite")
    assert result.response.content == REFUSAL
    with pytest.raises(UserNotFound):  # not even a user row was made for bob, let alone a ban
        world.service.user(UserRef("bob", world.bob.id))
    raised(world)


async def test_admin_autocomplete_is_for_admins_and_shows_hidden_boards(world) -> None:
    world.service.update_leaderboard("addone", visible=False)
    ch = world.channel
    assert await world.admin.autocomplete(ch, "admin pause", "leaderboard", "") == [
        {"name": "addone", "value": "addone"}
    ]
    assert await world.alice.autocomplete(ch, "admin pause", "leaderboard", "") == []
    assert await world.alice.autocomplete(ch, "leaderboard submit", "leaderboard", "") == []  # hidden from others


async def test_pause_and_resume(world) -> None:
    paused = await world.admin.slash(world.channel, "admin pause", leaderboard="addone")
    assert paused.ephemeral
    assert paused.response.content == "**addone** is paused: new submissions are refused."
    refused = await submit(world, world.alice)
    assert "is paused by the admins" in refused.response.content
    resumed = await world.admin.slash(world.channel, "admin resume", leaderboard="addone")
    assert resumed.response.content == "**addone** accepts submissions again."
    assert (await submit(world, world.alice)).followups
    raised(world)


async def test_unknown_leaderboard_is_named(world) -> None:
    result = await world.admin.slash(world.channel, "admin pause", leaderboard="nope")
    assert result.ephemeral
    assert result.response.content.startswith("There is no leaderboard named 'nope'.")
    assert [type(e) for e in raised(world)] == [LeaderboardNotFound]


async def test_sync_reports_each_leaderboard(world) -> None:
    result = await world.admin.slash(world.channel, "admin sync")
    lines = result.response.content.splitlines()
    assert lines[0] == "**Problem sync**"
    assert lines[1].startswith("**addone**: updated (")  # the problem set's deadline replaces the fixture's
    assert "deadline " in lines[1] and " -> 2099-" in lines[1], lines[1]  # old and new, as the CLI says
    assert world.service.leaderboard("addone").deadline.year == 2099
    again = await world.admin.slash(world.channel, "admin sync")
    assert again.response.content.splitlines()[1] == "**addone**: unchanged"


async def test_sync_runs_changed_references_first_unless_told_not_to(world) -> None:
    from helpers import check_reference_in_process

    world.bot.context.reference_check = lambda: check_reference_in_process
    reference = world.bot.settings.problems_dir / "addone" / "reference.py"
    reference.write_text(reference.read_text().replace("return [x + 1 for x in data[0]]", "return data[0] + 1"))
    refused = await world.admin.slash(world.channel, "admin sync", force=True)
    text = refused.response.content
    assert text.startswith("The problem set has errors, nothing was synced:")
    assert "reference.py: generate_input -> ref_kernel -> check_implementation" in text
    assert "ref_kernel raised TypeError" in text
    assert world.service.leaderboard("addone").deadline.year != 2099  # nothing applied
    done = await world.admin.slash(world.channel, "admin sync", force=True, skip_run=True)
    assert done.response.content.splitlines()[-1] == "Applied."
    assert world.service.leaderboard("addone").deadline.year == 2099
    assert [type(e) for e in raised(world)] == [InvalidChange]


async def test_create_and_update_check_devices_and_the_reference_as_sync_does(world) -> None:
    from helpers import check_reference_in_process

    world.bot.context.reference_check = lambda: check_reference_in_process
    world.bot.context.device_check = lambda d: None if d in ("cpu", "H100") else f"no runner serves {d}"
    unknown = await world.admin.slash(
        world.channel, "admin create", problem="addone", deadline="2099-06-30 12:00", devices="cpu,NOPE9", name="a2"
    )
    assert "Not done, the problem or its devices have errors" in unknown.response.content
    assert "devices: no runner serves NOPE9" in unknown.response.content
    reference = world.bot.settings.problems_dir / "addone" / "reference.py"
    reference.write_text(reference.read_text().replace("return [x + 1 for x in data[0]]", "return data[0] + 1"))
    broken = await world.admin.slash(
        world.channel, "admin create", problem="addone", deadline="2099-06-30 12:00", devices="cpu", name="a2"
    )
    assert "ref_kernel raised TypeError" in broken.response.content
    assert [b.name for b in world.service.list_leaderboards(include_hidden=True)] == ["addone"]  # nothing made
    made = await world.admin.slash(
        world.channel, "admin create", problem="addone", deadline="2099-06-30 12:00", devices="cpu", name="a2",
        skip_run=True,
    )  # fmt: skip
    assert made.response.content.startswith("Created **a2** on cpu")
    moved = await world.admin.slash(world.channel, "admin update", leaderboard="a2", devices="NOPE9")
    assert "devices: no runner serves NOPE9" in moved.response.content
    assert [type(e) for e in raised(world)] == [InvalidChange] * 3


async def test_sync_refuses_a_path_outside_the_problems_folder(world) -> None:
    result = await world.admin.slash(world.channel, "admin sync", path="../../etc/passwd")
    assert "is outside the problems folder" in result.response.content
    missing = await world.admin.slash(world.channel, "admin sync", path="other.yaml")
    assert "does not exist in the problems folder" in missing.response.content
    assert [type(e) for e in raised(world)] == [InvalidChange, InvalidChange]


async def test_create_update_and_delete(world) -> None:
    created = await world.admin.slash(
        world.channel, "admin create", problem="addone", deadline="2099-06-30 12:00", devices="cpu", name="addone-2"
    )
    assert created.response.content.startswith("Created **addone-2** on cpu, open until <t:")
    board = world.service.leaderboard("addone-2")
    assert board.devices == ("cpu",) and board.deadline == datetime(2099, 6, 30, 12, tzinfo=UTC)

    updated = await world.admin.slash(world.channel, "admin update", leaderboard="addone-2", devices="cpu,H100")
    assert updated.response.content == "**addone-2** updated: devices."
    same = await world.admin.slash(world.channel, "admin update", leaderboard="addone-2", devices="cpu, H100")
    assert same.response.content == "**addone-2**: nothing to change."

    kept = await world.admin.slash(world.channel, "admin delete", leaderboard="addone-2", confirm="addone")
    assert "Not deleted: type the name 'addone-2' exactly" in kept.response.content
    assert world.service.leaderboard("addone-2")
    gone = await world.admin.slash(world.channel, "admin delete", leaderboard="addone-2", confirm="addone-2")
    assert gone.response.content == "Deleted **addone-2** and all its submissions."
    assert [b.name for b in world.service.list_leaderboards(include_hidden=True)] == ["addone"]
    raised(world)


async def test_a_deadline_that_is_not_a_date_is_explained(world) -> None:
    result = await world.admin.slash(world.channel, "admin update", leaderboard="addone", deadline="next friday")
    assert result.response.content == (
        "The deadline 'next friday' is not a date and time: write it as YYYY-MM-DD HH:MM, in UTC, "
        "like 2026-12-31 18:00."
    )
    raised(world)


async def test_ban_and_unban(world) -> None:
    banned = await world.admin.slash(world.channel, "admin ban", user=world.alice, reason="shared the secret seed")
    assert banned.response.content == f"{world.alice.mention} is banned: shared the secret seed"
    refused = await submit(world, world.alice)
    assert refused.response.content == "You are banned from submitting. Reason: shared the secret seed"
    unbanned = await world.admin.slash(world.channel, "admin unban", user=world.alice)
    assert unbanned.response.content == f"{world.alice.mention} is no longer banned."
    assert (await submit(world, world.alice)).followups
    raised(world)


async def test_delete_submission_takes_it_off_the_ranking(world) -> None:
    await submit(world, world.alice, mode="ranked")
    await serve_queue(world)
    assert world.service.ranking("addone", "cpu").total == 1
    result = await world.admin.slash(world.channel, "admin delete-submission", submission_id=1)
    assert result.response.content == "Submission #1 is deleted and left the rankings."
    assert world.service.ranking("addone", "cpu").total == 0


async def test_rate_limit(world) -> None:
    result = await world.admin.slash(world.channel, "admin rate-limit", leaderboard="addone", per_hour=1)
    assert result.response.content == "**addone** now allows 1 submissions per user per hour."
    assert (await submit(world, world.alice)).followups
    limited = await submit(world, world.alice)
    assert limited.ephemeral and limited.followups == []
    cleared = await world.admin.slash(world.channel, "admin rate-limit", leaderboard="addone")
    assert cleared.response.content == "**addone** now allows the server-wide default."
    raised(world)


async def test_stats_show_the_queue_and_usage(world) -> None:
    await submit(world, world.alice, device="cpu, H100")
    result = await world.admin.slash(world.channel, "admin stats")
    text = result.response.content
    assert "**Queue**" in text
    assert "**cpu**: 1 queued" in text and "**H100**: 1 queued" in text
    assert "Workers: **none alive**" in text
    assert "1 submissions from 1 users" in text
    assert "By leaderboard: addone 1" in text
    assert "**Near clones of the top entries**\nnone by another account" in text  # issue 34 (docs/archive.md)
