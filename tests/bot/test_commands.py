"""The other /leaderboard commands, autocomplete, and the error handler, through SimCord."""

from __future__ import annotations

import io
import shutil
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from bot_fakes import accepted, launcher
from bot_steps import GOOD, raised, serve_queue

from bot.replies import NOT_YOUR_FAULT
from leaderboards.errors import SubmissionNotFound
from leaderboards.problems import load_problem
from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio


async def ranked(world, member, median_ns: float) -> int:
    """A ranked submission of ``member`` on cpu, served by the queue, scoring ``median_ns``."""
    receipt = world.service.submit(UserRef(member.name, member.id), "kernel.py", GOOD, "addone", ["cpu"], "ranked")
    await serve_queue(world, launcher(lambda r: accepted(r, median_ns)))
    return receipt.submission_id


async def test_commands_are_synced(world) -> None:
    names = set(world.alice.available_commands(world.channel))
    assert {f"leaderboard {c}" for c in ("submit", "list", "show", "mine", "task", "template", "submission")} <= names
    assert {"admin sync", "admin pause", "admin ban", "admin stats", "admin rate-limit"} <= names


async def test_autocomplete_leaderboard_device_and_language(world) -> None:
    ch, alice = world.channel, world.alice
    assert await alice.autocomplete(ch, "leaderboard submit", "leaderboard", "add") == [
        {"name": "addone", "value": "addone"}
    ]
    assert await alice.autocomplete(ch, "leaderboard submit", "leaderboard", "zzz") == []
    devices = await alice.autocomplete(ch, "leaderboard submit", "device", "", leaderboard="addone")
    assert [c["value"] for c in devices] == ["all", "cpu", "H100"]
    assert [
        c["value"] for c in await alice.autocomplete(ch, "leaderboard show", "device", "h1", leaderboard="addone")
    ] == ["H100"]
    languages = await alice.autocomplete(ch, "leaderboard template", "language", "", leaderboard="addone")
    assert languages == [{"name": "pytorch", "value": "pytorch"}]
    assert await alice.autocomplete(ch, "leaderboard template", "language", "", leaderboard="nope") == []


async def test_list_shows_state_devices_and_deadline(world) -> None:
    result = await world.alice.slash(world.channel, "leaderboard list")
    assert result.ephemeral
    line = result.response.content.splitlines()[1]
    assert line.startswith("**addone**: 🟢 open, closes <t:")
    assert "cpu, H100 · py · 0 submissions" in line


async def test_show_ranks_per_device_with_a_chart(world) -> None:
    await ranked(world, world.alice, 20_000)
    await ranked(world, world.bob, 10_000)
    result = await world.alice.slash(world.channel, "leaderboard show", leaderboard="addone", device="cpu")
    text = result.response.content
    assert "**cpu**: 2 ranked" in text
    rows = text.split("```")[1].strip().splitlines()
    assert rows[1].split()[:4] == ["1", "bob", "10.0", "µs"]
    assert rows[2].split()[:4] == ["2", "alice", "20.0", "µs"]
    [chart] = result.response.attachments
    assert chart.filename == "addone-best-scores.png"
    assert (await chart.read()).startswith(b"\x89PNG")


async def test_show_without_device_has_one_table_per_device(world) -> None:
    result = await world.alice.slash(world.channel, "leaderboard show", leaderboard="addone")
    text = result.response.content
    assert "**cpu**: 0 ranked" in text and "**H100**: 0 ranked" in text
    assert "No ranked submissions yet" in text
    assert result.response.attachments == []  # nothing to chart


async def test_mine_lists_only_my_submissions(world) -> None:
    mine = await ranked(world, world.alice, 20_000)
    await ranked(world, world.bob, 10_000)
    result = await world.alice.slash(world.channel, "leaderboard mine", leaderboard="addone")
    assert result.ephemeral
    text = result.response.content
    assert f"**#{mine}**" in text and "**#2** ·" not in text
    assert "✅ **cpu**: accepted · score **20.0 µs** · rank **#2** (your best)" in text


async def test_task_has_the_description_and_files(world) -> None:
    result = await world.alice.slash(world.channel, "leaderboard task", leaderboard="addone")
    [embed] = result.response.embeds
    assert embed.title == "addone"
    assert embed.description.startswith("Add one to every element.")
    assert {f.name: f.value for f in embed.fields}["Devices"] == "cpu, H100"
    assert [a.filename for a in result.response.attachments] == ["reference.py"]


async def test_task_of_many_files_stays_within_ten_attachments(world, problems_dir: Path) -> None:
    """Discord takes ten attachments: beyond them reference.py is one and a zip holds the others in their folders
    (a problem of 12 files and a long description made 13, and Discord's limit left three out)."""
    folder = problems_dir / "many"
    shutil.copytree(problems_dir / "addone", folder)
    helpers = {f"sub/helper{i}.py": f"X = {i}\n" for i in range(11)}
    for rel, text in helpers.items():
        (folder / rel).parent.mkdir(exist_ok=True)
        (folder / rel).write_text(text)
    task = (folder / "task.yml").read_text().replace("description: |", "description: |\n  " + "long " * 1000)
    (folder / "task.yml").write_text(f"{task}files: [reference.py, {', '.join(helpers)}]\n")
    deadline = datetime.now(UTC) + timedelta(days=30)
    world.service.create_leaderboard(load_problem(folder), name="many", deadline=deadline, devices=["cpu"])

    result = await world.alice.slash(world.channel, "leaderboard task", leaderboard="many")
    names = [a.filename for a in result.response.attachments]
    assert names == ["many-description.md", "reference.py", "many-files.zip"]
    archive = zipfile.ZipFile(io.BytesIO(await result.response.attachments[2].read()))
    assert {name: archive.read(name).decode() for name in archive.namelist()} == helpers
    [embed] = result.response.embeds
    assert {f.name: f.value for f in embed.fields}["Files"] == "12: many-files.zip holds all but reference.py"
    assert "left out" not in (result.response.content or "")


async def test_template_is_a_file(world) -> None:
    result = await world.alice.slash(world.channel, "leaderboard template", leaderboard="addone", language="pytorch")
    [file] = result.response.attachments
    assert file.filename == "addone_pytorch.py"
    assert (await file.read()).startswith(b"#!POPCORN leaderboard addone\ndef custom_kernel")
    missing = await world.alice.slash(world.channel, "leaderboard template", leaderboard="addone", language="cuda")
    assert "has no 'cuda' template; it offers: pytorch." in missing.response.content
    raised(world)


async def test_submission_details_for_the_owner_only(world) -> None:
    sid = await ranked(world, world.alice, 20_000)
    own = await world.alice.slash(world.channel, "leaderboard submission", submission_id=sid)
    assert own.ephemeral
    assert "✅ **cpu**: accepted" in own.response.content
    names = [a.filename for a in own.response.attachments]
    assert names == ["kernel.py", f"logs-{sid}-cpu.txt"]
    theirs = await world.bob.slash(world.channel, "leaderboard submission", submission_id=sid)
    assert theirs.ephemeral
    assert theirs.response.content == f"There is no submission #{sid} of yours."  # says nothing of whose it is
    assert theirs.response.attachments == []
    assert [type(e) for e in raised(world)] == [SubmissionNotFound]


async def test_unexpected_failure_is_not_the_users_fault(world, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(world.service, "list_leaderboards", broken)
    result = await world.alice.slash(world.channel, "leaderboard list")
    assert result.ephemeral
    assert result.response.content == NOT_YOUR_FAULT
    assert "fire" not in result.response.content
    assert [type(e) for e in raised(world)] == [RuntimeError]


async def test_a_failing_autocomplete_offers_nothing_and_breaks_nothing(world, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(world.service, "list_leaderboards", broken)
    # discord.py logs the error and answers no suggestions; the command itself would explain the failure.
    assert await world.alice.autocomplete(world.channel, "leaderboard submit", "leaderboard", "add") in ([], None)
