"""/leaderboard submit: the answer, the live public status message, the report its author alone gets, and every
refusal."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import discord
import pytest
from bot_fakes import accepted, compile_error, held, launcher, wrong_answer
from bot_steps import GOOD, STATUS_INTERVAL, raised, runner_online, serve_queue, submit

from leaderboards.errors import UserError
from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio


def edits_of(world, message_id: int) -> list:
    return [r for r in world.env.http_requests if r.method == "PATCH" and str(message_id) in r.path]


def private_report(result):
    """The report its author alone sees: the ephemeral followup after the public status message."""
    public, private = result.followups
    assert not public.ephemeral and private.ephemeral
    return private


async def test_submit_answers_privately_and_posts_a_public_status(world) -> None:
    runner_online(world, "cpu")
    result = await submit(world, world.alice, device="cpu, H100")
    assert result.ephemeral
    assert result.response.content.startswith("Submission #1 received")
    [status] = result.followups
    assert not status.ephemeral
    lines = status.content.splitlines()
    assert lines[0] == "**Submission #1** · `kernel.py` → **addone** · test · by alice"
    assert lines[1:] == [
        "⏳ **cpu**: queued (#1 in the queue)",
        "⏳ **H100**: no runner for H100 is online; your job waits in the queue (#1)",
    ]


async def test_status_follows_the_job_then_shows_the_report(world) -> None:
    result = await submit(world, world.alice, mode="ranked", device="cpu")
    [status] = result.followups
    gate = asyncio.Event()
    worker = asyncio.create_task(serve_queue(world, held(gate)))
    for _ in range(500):  # the worker runs in real time beside the simulated Discord
        jobs = world.service.submission_status(1).jobs
        if jobs[0].events and jobs[0].events[-1].phase == "testing":
            break
        await asyncio.sleep(0.01)
    await world.env.advance_time(STATUS_INTERVAL)
    assert status.message.id == result.followups[0].id
    assert result.followups[0].content.endswith("⚙️ **cpu**: testing")  # public: the phase, not its detail

    gate.set()
    await worker
    await world.env.advance_time(STATUS_INTERVAL)
    public = result.followups[0]
    assert public.content.splitlines() == [
        "**Submission #1** · `kernel.py` → **addone** · ranked · by alice",
        "✅ **cpu**: accepted · score **12.5 µs** · rank **#1** (your best)",
        "Report and logs went to its author (only they can see them). "
        "Its author sees the details with `/leaderboard submission 1`.",
    ]
    assert public.attachments == []
    report = private_report(result)
    text = report.content
    assert "✅ **cpu**: accepted · score **12.5 µs** · rank **#1** (your best)" in text
    assert "tests: 2/2 passed" in text
    assert "✅ bench 1 (size=1024, seed=3): 12.5 µs (IQR 12.4–12.7 µs, n=100)" in text
    assert "secret-seed run: passed" in text
    assert [a.filename for a in report.attachments] == ["logs-1-cpu.txt"]
    # One edit per change of state (testing, final): polls that saw nothing new edited nothing.
    assert len(edits_of(world, public.id)) == 2
    assert world.bot.followers == {}


async def test_a_second_poll_without_change_edits_nothing(world) -> None:
    result = await submit(world, world.alice)
    await world.env.advance_time(STATUS_INTERVAL * 3)
    assert edits_of(world, result.followups[0].id) == []
    assert 1 in world.bot.followers


async def test_wrong_answer_report_shows_the_mismatch_to_its_author_only(world) -> None:
    result = await submit(world, world.alice)
    await serve_queue(world, launcher(wrong_answer))
    await world.env.advance_time(STATUS_INTERVAL)
    public = result.followups[0].content
    assert "❌ **cpu**: wrong answer" in public and "mismatch" not in public and "test 2" not in public
    text = private_report(result).content
    assert "❌ **cpu**: wrong answer" in text
    assert "❌ test 2 (size=16, seed=2): wrong answer: mismatch at [3]: 4.0 != 5.0" in text


async def test_the_report_shows_the_runners_roofline_share(world) -> None:
    result = await submit(world, world.alice, mode="benchmark", device="H100")
    await serve_queue(world)
    await world.env.advance_time(STATUS_INTERVAL)
    # 20 MB in 12.5 µs is 1.6 TB/s; the H100's datasheet bandwidth is 3.35 TB/s.
    text = private_report(result).content
    assert "48% of roofline (memory)" in text and "48% of roofline overall (H100 datasheet peaks: 3.35 TB/s" in text


async def test_all_devices_gives_one_line_per_device(world) -> None:
    result = await submit(world, world.alice, device="all")
    await serve_queue(world)
    await world.env.advance_time(STATUS_INTERVAL)
    text = result.followups[0].content
    assert "✅ **cpu**: accepted" in text and "✅ **H100**: accepted" in text


async def test_long_report_becomes_a_file(world, monkeypatch) -> None:
    def chatty(request):
        from bot_fakes import accepted

        result = accepted(request)
        return result.model_copy(update={"message": "", "stdout": "x" * 50_000})

    result = await submit(world, world.alice)
    await serve_queue(world, launcher(chatty))
    await world.env.advance_time(STATUS_INTERVAL)
    report = private_report(result)
    assert len(report.content) <= 2000
    logs = next(a for a in report.attachments if a.filename == "logs-1-cpu.txt")
    assert "x" * 1000 in (await logs.read()).decode()


@pytest.mark.parametrize(
    ("file", "options", "expected"),
    [
        (("kernel.txt", GOOD), {}, "takes Python files (.py); 'kernel.txt' is not one."),
        (("kernel.py", b"   "), {}, "kernel.py is empty."),
        (
            ("kernel.py", GOOD),
            {"leaderboard": "nope"},
            "There is no leaderboard named 'nope'. Known leaderboards: addone.",
        ),
        (("kernel.py", GOOD), {"device": "TPU"}, "does not run on 'TPU'; choose one of: cpu, H100 (or 'all')."),
    ],
)
async def test_mistakes_are_explained_only_to_the_submitter(world, file, options, expected) -> None:
    result = await submit(world, world.alice, file=file, **options)
    assert result.ephemeral
    assert expected in result.response.content
    assert result.followups == []
    assert world.service.user_submissions(UserRef("alice", world.alice.id)) == ()
    assert all(isinstance(e, UserError) for e in raised(world))


async def test_file_above_the_size_limit_is_refused_before_download(world, monkeypatch) -> None:
    downloads = []

    async def read(self, **kwargs):
        downloads.append(self.filename)
        return b""

    monkeypatch.setattr(world.service.settings, "max_submission_bytes", 2048)
    monkeypatch.setattr(discord.Attachment, "read", read)
    result = await submit(world, world.alice, file=("kernel.py", b"#" * 3071 + b"\n"))
    assert result.ephemeral
    assert result.response.content == "kernel.py is 3,072 bytes; the limit is 2,048 bytes."
    assert downloads == []
    raised(world)


async def test_closed_paused_and_rate_limited_leaderboards(world) -> None:
    world.service.settings.late_submissions_per_hour = 0  # no practice after the deadline
    world.service.update_leaderboard("addone", deadline=datetime.now(UTC) - timedelta(hours=1))
    closed = await submit(world, world.alice)
    assert "closed on" in closed.response.content and "no longer accepts submissions" in closed.response.content

    world.service.update_leaderboard("addone", deadline=datetime.now(UTC) + timedelta(days=1))
    world.service.pause("addone")
    paused = await submit(world, world.alice)
    assert "is paused by the admins" in paused.response.content

    world.service.resume("addone")
    world.service.set_rate_limit("addone", 1)
    assert (await submit(world, world.alice)).followups
    limited = await submit(world, world.alice)
    assert limited.ephemeral and limited.followups == []
    assert "hour" in limited.response.content
    raised(world)


async def test_banned_user_is_told_why(world) -> None:
    world.service.ban_user(UserRef("alice", world.alice.id), reason="cheating")
    result = await submit(world, world.alice)
    assert result.response.content == "You are banned from submitting. Reason: cheating"
    raised(world)


async def test_compile_error_shows_the_error_and_attaches_the_output(world) -> None:
    result = await submit(world, world.alice)
    await serve_queue(world, launcher(compile_error))
    await world.env.advance_time(STATUS_INTERVAL)
    public = result.followups[0]
    assert public.content.splitlines()[1] == "❌ **cpu**: compile error"
    assert "SyntaxError" not in public.content and "return [x + 1" not in public.content
    report = private_report(result)
    assert report.content.splitlines()[2:] == [
        "❌ **cpu**: compile error",
        "↳ kernel.py could not be imported",
        "```",
        '  File "kernel.py", line 2',
        "    return [x + 1 for x in data[0]",
        "SyntaxError: '[' was never closed",
        "```",
    ]
    [logs] = report.attachments
    assert logs.filename == "logs-1-cpu.txt"
    assert (await logs.read()).decode().startswith("===== compile output =====")


async def test_profile_comes_as_an_attachment(world) -> None:
    result = await submit(world, world.alice, mode="profile")
    await serve_queue(world)
    await world.env.advance_time(STATUS_INTERVAL)
    report = private_report(result)
    names = [a.filename for a in report.attachments]
    assert names == ["logs-1-cpu.txt", "profile-1-cpu.txt"]
    assert (await report.attachments[1].read()).startswith(b"kernel  time  occupancy")


async def test_a_ranked_run_that_is_not_a_personal_best_says_so(world) -> None:
    await submit(world, world.alice, mode="ranked")
    await serve_queue(world, launcher(lambda r: accepted(r, 10_000)))
    result = await submit(world, world.alice, mode="ranked")
    await serve_queue(world, launcher(lambda r: accepted(r, 20_000)))
    await world.env.advance_time(STATUS_INTERVAL)
    assert "✅ **cpu**: accepted · score **20.0 µs** · not better than your best: your rank stays" in (
        result.followups[0].content
    )


async def test_status_moves_to_a_channel_message_when_the_interaction_token_expired(world) -> None:
    result = await submit(world, world.alice)
    # Discord refuses edits through an interaction token older than 15 minutes (code 50027).
    world.env.inject_error("PATCH", "/webhooks/*", status=401, code=50027, message="Invalid Webhook Token", times=None)
    await serve_queue(world)
    await world.env.advance_time(STATUS_INTERVAL)
    assert "queue" in result.followups[0].content  # the old message could not be edited any more
    last = world.channel.last_message
    assert last is not None and last.id != result.followups[0].id
    assert last.content.startswith("**Submission #1**") and "✅ **cpu**: accepted" in last.content
    assert "tests: 2/2 passed" not in last.content  # still only the public part
    assert world.bot.followers == {}


async def test_every_command_is_acknowledged_before_the_service_is_asked(world) -> None:
    """Discord drops an interaction not answered in 3 s: each command defers before any (slow) service call."""
    seen: list[tuple[str, bool]] = []
    service = world.bot.service
    env = world.env

    class Watching:
        def __getattr__(self, name: str):
            attr = getattr(service, name)
            if not callable(attr):
                return attr

            def call(*args, **kwargs):
                seen.append((name, sum("/callback" in r.path for r in env.http_requests) > before))
                return attr(*args, **kwargs)

            return call

    world.bot.context.service = Watching()  # type: ignore[assignment]
    commands = [
        ("leaderboard submit", {"file": ("kernel.py", GOOD), "leaderboard": "addone", "mode": "test", "device": "cpu"}),
        ("leaderboard list", {}),
        ("leaderboard show", {"leaderboard": "addone"}),
        ("leaderboard mine", {"leaderboard": "addone"}),
        ("leaderboard task", {"leaderboard": "addone"}),
        ("leaderboard template", {"leaderboard": "addone", "language": "pytorch"}),
        ("leaderboard submission", {"submission_id": 1}),
        ("admin stats", {}),
        ("admin pause", {"leaderboard": "addone"}),
    ]
    for name, options in commands:
        before = sum("/callback" in r.path for r in env.http_requests)
        who = world.admin if name.startswith("admin") else world.alice
        result = await who.slash(world.channel, name, **options)
        assert result.acknowledged, name
    assert seen and all(acked for _, acked in seen), seen


async def test_following_stops_after_the_timeout_and_says_where_to_look(world) -> None:
    world.bot.settings.follow_timeout_s = STATUS_INTERVAL * 2
    result = await submit(world, world.alice)
    await world.env.advance_time(STATUS_INTERVAL * 3)
    text = result.followups[0].content
    assert text.endswith("(Stopped following it here: see `/leaderboard submission 1`.)")
    assert world.bot.followers == {}


async def test_a_file_above_the_upload_limit_is_left_out_with_a_sentence(world, monkeypatch) -> None:
    import bot.commands.leaderboard as commands

    monkeypatch.setattr(commands, "upload_limit", lambda _interaction: 4096)

    def chatty(request):
        return accepted(request).model_copy(update={"stdout": "y" * 10_000})

    result = await submit(world, world.alice)
    await serve_queue(world, launcher(chatty))
    await world.env.advance_time(STATUS_INTERVAL)
    report = private_report(result)
    assert report.attachments == []
    assert "logs-1-cpu.txt (9.8 KiB) is above Discord's upload limit (4.0 KiB) and was left out." in report.content
    assert "✅ **cpu**: accepted" in report.content


async def test_a_database_or_discord_hiccup_skips_a_round_not_the_follower(world, monkeypatch) -> None:
    real = world.service.submission_status
    failures = iter([RuntimeError("connection reset")])

    def flaky(submission_id):
        for exc in failures:
            raise exc
        return real(submission_id)

    result = await submit(world, world.alice)
    monkeypatch.setattr(world.service, "submission_status", flaky)
    await serve_queue(world)
    await world.env.advance_time(STATUS_INTERVAL)  # the database is away for this round
    assert "queue" in result.followups[0].content
    world.env.inject_error("PATCH", "/webhooks/*", status=503, times=1)
    await world.env.advance_time(STATUS_INTERVAL)  # Discord is away for this one
    assert "queue" in result.followups[0].content
    await world.env.advance_time(STATUS_INTERVAL)
    assert "✅ **cpu**: accepted" in result.followups[0].content
    assert world.bot.followers == {}
    assert world.env.errors == []


async def test_user_text_pings_nobody_and_details_stay_private(world) -> None:
    def leaky(request):
        return wrong_answer(request).model_copy(
            update={"message": "@everyone see line 2: secret_trick()", "stderr": "Traceback: secret_trick()\n"}
        )

    result = await submit(world, world.alice, file=("@here.py", GOOD))
    await serve_queue(world, launcher(leaky))
    await world.env.advance_time(STATUS_INTERVAL)
    public = result.followups[0].content
    assert public.startswith("**Submission #1** · `@\u200bhere.py` → **addone**")
    assert "secret_trick" not in public and "@everyone" not in public
    private = private_report(result).content
    assert "@\u200beveryone see line 2: secret_trick()" in private and "@everyone" not in private


async def test_a_private_thread_per_submission_holds_the_report(world) -> None:
    world.bot.settings.private_threads = True
    result = await submit(world, world.alice)
    [thread] = world.channel.threads
    assert thread.name == "Submission #1 (addone)"
    assert world.env.backend.get_channel(thread.id).type == discord.ChannelType.private_thread.value
    assert world.alice.id in world.env.backend.get_channel(thread.id).thread_members
    assert f"Its report will be in <#{thread.id}>." in result.response.content
    await serve_queue(world)
    await world.env.advance_time(STATUS_INTERVAL)
    [public] = result.followups  # nothing ephemeral: the report went to the thread
    assert public.content.splitlines()[-1].startswith(f"Report and logs for its author: <#{thread.id}>")
    report = thread.last_message
    assert "tests: 2/2 passed" in report.content and [a.filename for a in report.attachments] == ["logs-1-cpu.txt"]


async def test_submissions_only_in_the_configured_channel(world) -> None:
    contests = world.guild.create_text_channel("contests")
    world.bot.settings.submit_channel_ids = [contests.id]
    refused = await submit(world, world.alice)
    assert (
        refused.ephemeral and refused.response.content == f"Submissions go in <#{contests.id}>; nothing was submitted."
    )
    assert world.service.user_submissions(UserRef("alice", world.alice.id)) == ()
    accepted_here = await world.alice.slash(
        contests, "leaderboard submit", file=("kernel.py", GOOD), leaderboard="addone", mode="test", device="cpu"
    )
    assert accepted_here.response.content.startswith("Submission #1 received")
    raised(world)


async def test_no_device_given_offers_a_menu_of_the_leaderboards_devices(world) -> None:
    result = await submit(world, world.alice, device=None)
    picker = result.response
    assert picker.ephemeral and picker.content == "**addone** runs on cpu, H100. Which should run your kernel?"
    [row] = picker.components
    assert [o["value"] for o in row["components"][0]["options"]] == ["cpu", "H100"]
    assert world.service.user_submissions(UserRef("alice", world.alice.id)) == ()

    await world.alice.select(picker, ["H100"])
    assert result.response.content == "Submitting to **addone** on H100…" and result.response.components == []
    received, status = result.followups
    assert received.content.startswith("Submission #1 received") and not status.ephemeral
    assert "**H100**" in status.content and "**cpu**" not in status.content
    [sub] = world.service.user_submissions(UserRef("alice", world.alice.id))
    assert [j.device for j in sub.jobs] == ["H100"]


async def test_a_menu_left_unanswered_submits_nothing(world) -> None:
    from bot.commands.leaderboard import PICK_TIMEOUT_S

    result = await submit(world, world.alice, device=None)
    await world.env.advance_time(PICK_TIMEOUT_S + 1)
    assert result.response.content == "No device was chosen in time; nothing was submitted."
    assert result.response.components == []
    assert world.service.user_submissions(UserRef("alice", world.alice.id)) == ()


async def test_commands_have_a_per_user_cooldown(world) -> None:
    world.bot.settings.submits_per_minute = 2
    world.bot.settings.commands_per_minute = 3
    assert (await submit(world, world.alice)).followups
    assert (await submit(world, world.alice)).followups
    third = await submit(world, world.alice)
    assert third.ephemeral and third.response.content.startswith("Slow down a little: try again in")
    assert (await submit(world, world.bob)).followups  # budgets are per user
    for _ in range(3):
        assert (await world.alice.slash(world.channel, "leaderboard list")).response.content.startswith("**Leader")
    slow = await world.alice.slash(world.channel, "leaderboard mine", leaderboard="addone")
    assert slow.response.content.startswith("Slow down a little")  # one budget for the other commands together
    await world.env.advance_time(61)
    assert (await submit(world, world.alice)).followups
    assert len(world.service.user_submissions(UserRef("alice", world.alice.id))) == 3
    assert [type(e).__name__ for e in raised(world)] == ["CommandOnCooldown", "CommandOnCooldown"]


async def test_the_files_header_directives_name_what_the_options_leave_out(world) -> None:
    code = b"#!POPCORN leaderboard addone\n#!POPCORN gpu H100\n#!kernelcup mode benchmark\n" + GOOD
    result = await submit(world, world.alice, file=("kernel.py", code), leaderboard=None, mode=None, device=None)
    [status] = result.followups
    assert "→ **addone** · benchmark" in status.content and "**H100**" in status.content
    assert "**cpu**" not in status.content
    result = await submit(world, world.alice, file=("kernel.py", code), leaderboard=None, mode="test", device="all")
    assert "· test ·" in result.followups[0].content and "**cpu**" in result.followups[0].content
