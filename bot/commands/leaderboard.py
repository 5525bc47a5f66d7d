"""``/leaderboard …``: the competitors' commands. Each one defers, makes one service call, renders.

The group gets its dependencies (``BotContext``: the service, the settings, …) in its constructor. The service is
blocking (SQLAlchemy sessions), so every call goes through ``bot.calls.call`` (``asyncio.to_thread``); errors of the
core are shown as they are by the tree's error handler. Every command spends one of the user's command budgets
(``bot.cooldowns``), in the group's ``interaction_check``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands

from bot.calls import call, user_ref
from bot.chart import score_chart_png
from bot.context import BotContext
from bot.cooldowns import spend
from bot.follow import AuthorChannel, StatusMessage, follow_submission
from bot.hacks import hack_reply
from bot.limits import File, Reply
from bot.replies import Refused, defer, send, upload_limit
from bot.reports import leaderboards_text as list_text
from bot.reports import report, show_text, status_text, submissions_text, task_reply, thread_intro
from bot.standings import standings_reply
from leaderboards.directives import parse_directives
from leaderboards.errors import UserError
from leaderboards.licences import CHOICES as LICENCE_CHOICES
from leaderboards.results import (
    COMPARE_MAX_ROUNDS,
    COMPARE_MIN_ROUNDS,
    Ranking,
    SubmissionReceipt,
    UserRef,
)

if TYPE_CHECKING:
    from leaderboards.service import LeaderboardService

log = logging.getLogger(__name__)

Mode = Literal["test", "benchmark", "ranked", "profile", "compare"]
ALL_DEVICES = "all"
MAX_CHOICES = 25  # Discord shows at most 25 autocomplete choices (and select options)
PICK_TIMEOUT_S = 180.0
"""How long the device menu of a submit that named no device waits for a choice."""


async def leaderboard_choices(
    service: LeaderboardService, current: str, viewer: UserRef | None = None
) -> list[app_commands.Choice[str]]:
    boards = await call(service.list_leaderboards, viewer=viewer)
    current = current.lower()
    names = [b.name for b in boards if current in b.name.lower()]
    # Open leaderboards first: they are the ones people submit to.
    open_names = {b.name for b in boards if b.is_open and not b.paused}
    names.sort(key=lambda n: (n not in open_names, n))
    return [app_commands.Choice(name=n, value=n) for n in names[:MAX_CHOICES]]


async def device_choices(
    service: LeaderboardService, interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    """The devices of the leaderboard already chosen (every leaderboard's, before one is)."""
    chosen = getattr(interaction.namespace, "leaderboard", None)
    boards = await call(service.list_leaderboards, viewer=user_ref(interaction))
    devices: list[str] = []
    for b in boards:
        if chosen in (None, "", b.name):
            devices.extend(d for d in b.devices if d not in devices)
    choices = [d for d in devices if current.lower() in d.lower()]
    if len(devices) > 1 and current.lower() in ALL_DEVICES:
        choices.insert(0, ALL_DEVICES)
    return [app_commands.Choice(name=d, value=d) for d in choices[:MAX_CHOICES]]


async def language_choices(
    service: LeaderboardService, interaction: discord.Interaction, current: str
) -> list[app_commands.Choice[str]]:
    """The template languages of the chosen leaderboard."""
    chosen = getattr(interaction.namespace, "leaderboard", None)
    if not chosen:
        return []
    try:
        task = await call(service.task, chosen, viewer=user_ref(interaction))
    except Exception:  # an unknown name while typing: offer nothing rather than an error
        return []
    return [
        app_commands.Choice(name=label, value=label)
        for label in sorted(task.templates)
        if current.lower() in label.lower()
    ][:MAX_CHOICES]


def leaderboard_rankings(
    service: LeaderboardService, name: str, devices: list[str] | None, viewer: UserRef | None = None
) -> list[Ranking]:
    """Every ranked user per device (the table shows the top rows; the chart uses them all)."""
    if devices is None:
        devices = list(service.leaderboard(name, viewer=viewer).devices)
    return [service.ranking(name, d, limit=None, viewer=viewer) for d in devices]


def score_histories(
    service: LeaderboardService, name: str, devices: list[str], viewer: UserRef | None = None
) -> dict[str, tuple[tuple[datetime, float], ...]]:
    """Every eligible ranked score per device, oldest first: the chart draws the running best of each."""
    return {device: service.score_history(name, device, viewer=viewer) for device in devices}


def parse_devices(text: str | None) -> list[str] | None:
    """The devices option as a list (comma-separated names); None when empty or 'all'."""
    if text is None or text.strip().lower() in ("", ALL_DEVICES):
        return None
    devices = [d.strip() for d in text.split(",") if d.strip()]
    return list(dict.fromkeys(devices)) or None


def submit_devices(text: str | None) -> list[str] | None:
    """The submit command's devices option as the service takes it ('all' included); None lets the service decide
    (the file's header directives, else the leaderboard's only device)."""
    if text is None or not text.strip():
        return None
    return [d.strip() for d in text.split(",") if d.strip()] or None


class DevicePicker(discord.ui.View):
    """The menu a submit that named no device shows, only to its author: the leaderboard's devices, several
    allowed. ``chosen`` is set when they pick (None after ``PICK_TIMEOUT_S``)."""

    def __init__(self, leaderboard: str, devices: Sequence[str]) -> None:
        super().__init__(timeout=PICK_TIMEOUT_S)
        self.leaderboard = leaderboard
        self.chosen: list[str] | None = None
        options = [discord.SelectOption(label=d, value=d) for d in devices[:MAX_CHOICES]]
        menu: discord.ui.Select[DevicePicker] = discord.ui.Select(
            placeholder="Devices to run it on", min_values=1, max_values=len(options), options=options
        )
        menu.callback = self._picked  # type: ignore[method-assign]
        self.menu = menu
        self.add_item(menu)

    async def _picked(self, interaction: discord.Interaction) -> None:
        self.chosen = list(self.menu.values)
        await interaction.response.edit_message(
            content=f"Submitting to **{self.leaderboard}** on {', '.join(self.chosen)}…", view=None
        )
        self.stop()


async def pick_devices(interaction: discord.Interaction, leaderboard: str, devices: Sequence[str]) -> list[str] | None:
    """Ask the author which devices to run on; None (and the menu says so) when they do not choose in time."""
    picker = DevicePicker(leaderboard, devices)
    question = f"**{leaderboard}** runs on {', '.join(devices)}. Which should run your kernel?"
    message = await send(interaction, Reply(content=question), view=picker)
    if await picker.wait():  # timed out
        try:
            await message.edit(content="No device was chosen in time; nothing was submitted.", view=None)
        except discord.HTTPException:
            log.info("could not close the device menu of %s", interaction.user.id)
        return None
    return picker.chosen


async def private_thread(interaction: discord.Interaction, receipt: SubmissionReceipt) -> discord.Thread | None:
    """A private thread for one submission, with its author in it (and, as for any private thread, the server's
    moderators); None where the channel cannot have one or the bot may not make it (the author then gets
    ephemeral messages)."""
    channel = interaction.channel
    if not isinstance(channel, discord.TextChannel):
        return None
    try:
        thread = await channel.create_thread(
            name=f"Submission #{receipt.submission_id} ({receipt.leaderboard})",
            type=discord.ChannelType.private_thread,
            invitable=False,
        )
        await thread.add_user(interaction.user)
        await thread.send(thread_intro(receipt))
    except discord.HTTPException as exc:
        log.warning("could not open a private thread for submission %s: %s", receipt.submission_id, exc)
        return None
    return thread


def check_channel(interaction: discord.Interaction, allowed: Sequence[int]) -> None:
    """Submissions only in the configured channels (``DISCORD_SUBMIT_CHANNEL_IDS``), when there are any."""
    if allowed and interaction.channel_id not in allowed:
        raise Refused("Submissions go in " + " or ".join(f"<#{c}>" for c in allowed) + "; nothing was submitted.")


class LeaderboardCommands(app_commands.Group):
    def __init__(self, ctx: BotContext) -> None:
        super().__init__(name="leaderboard", description="Submit kernels and see the leaderboards")
        self.ctx = ctx

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        """Every command spends one of the user's budgets: ``submit`` its own, the others the common one."""
        submitting = interaction.command is not None and interaction.command.name == "submit"
        spend(self.ctx.cooldowns, self.ctx.settings, "submit" if submitting else "command", interaction)
        return True

    async def _leaderboards(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await leaderboard_choices(self.ctx.service, current, user_ref(interaction))

    async def _devices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await device_choices(self.ctx.service, interaction, current)

    async def _languages(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await language_choices(self.ctx.service, interaction, current)

    @app_commands.command(name="submit", description="Submit a kernel file to a leaderboard")
    @app_commands.describe(
        file="Your kernel: a .py file defining custom_kernel(data), or a .cu file",
        leaderboard="The leaderboard (problem) to submit to (default: the file's '#!kernelcup leaderboard' line)",
        mode="test: check correctness · benchmark: time it · ranked: enter the ranking · profile: profile it · "
        "compare: time it against a second file (default: the file's '#!kernelcup mode' line, else ranked)",
        device="A device of that leaderboard, several separated by commas, or 'all' (compare: one)",
        against="Mode compare: the second file (B), timed against the first (A) on one device",
        rounds="Mode compare: the most rounds, even, 2 to 20 (default 14 on a GPU, 6 on the CPU; may stop sooner)",
        license="The open archive's licence (default: the file's '#!kernelcup license:' line, else your account's; "
        "none: never published)",
    )
    @app_commands.autocomplete(leaderboard=_leaderboards, device=_devices)
    @app_commands.choices(license=[app_commands.Choice(name=c, value=c) for c in LICENCE_CHOICES])
    async def submit(
        self,
        interaction: discord.Interaction,
        file: discord.Attachment,
        leaderboard: str | None = None,
        mode: Mode | None = None,
        device: str | None = None,
        against: discord.Attachment | None = None,
        rounds: app_commands.Range[int, COMPARE_MIN_ROUNDS, COMPARE_MAX_ROUNDS] | None = None,
        license: str | None = None,
    ) -> None:
        await defer(interaction)
        bot = self.ctx
        check_channel(interaction, bot.settings.submit_channel_ids)
        bot.service.check_upload_size(file.filename, file.size)  # refused before it is downloaded
        if (mode == "compare") != (against is not None):
            raise UserError(
                "A compare takes two files: choose mode compare and attach the second one as `against`."
                if mode == "compare"
                else "`against` is the second file of a compare: choose mode compare, or leave it out.",
                code="invalid_field",
                field="against",
            )
        if against is not None:
            bot.service.check_upload_size(against.filename, against.size)
        content = await file.read()
        devices = submit_devices(device)
        if against is not None:
            if devices is not None and len(devices) > 1:
                raise UserError("A compare runs both files on one device: name one.", code="one_device")
            content_b = await against.read()
            one = devices[0] if devices else None
            receipt = await call(
                bot.service.compare, user_ref(interaction), file.filename, content, against.filename, content_b,
                leaderboard, one, rounds,
            )  # fmt: skip
            await self._follow(interaction, receipt)
            return
        if devices is None:  # no device named here or in the file: offer the leaderboard's, if it has several
            text = content.decode("utf-8", errors="replace")
            header = parse_directives(text)
            name = leaderboard or header.leaderboard
            if name and not header.devices:
                offered = (await call(bot.service.leaderboard, name, viewer=user_ref(interaction))).devices
                if len(offered) > 1:
                    devices = await pick_devices(interaction, name, offered)
                    if devices is None:
                        return
        receipt = await call(
            bot.service.submit, user_ref(interaction), file.filename, content, leaderboard, devices, mode,
            licence=license,
        )  # fmt: skip
        await self._follow(interaction, receipt)

    async def _follow(self, interaction: discord.Interaction, receipt: SubmissionReceipt) -> None:
        """Answer a queued submission: where its report will be, a status message kept up to date (public, but the
        author's alone on a hidden leaderboard)."""
        bot = self.ctx
        thread = await private_thread(interaction, receipt) if bot.settings.private_threads else None
        where = f" Its report will be in {thread.mention}." if thread else " You'll get its report here."
        received = f"Submission #{receipt.submission_id} received. I'll keep the status message below up to date."
        if receipt.duplicate:
            received = (
                f"You sent this same file a moment ago: that is submission #{receipt.submission_id}, so it was not run "
                "again. Its status is below."
            )
        await send(interaction, Reply(content=received + where))
        text = status_text(await call(bot.service.submission_status, receipt.submission_id))
        message = await send(interaction, Reply(content=text), ephemeral=not receipt.visible)
        status = StatusMessage(message, upload_limit(interaction))
        author = AuthorChannel(interaction, upload_limit(interaction), thread)
        bot.follow(
            receipt.submission_id,
            follow_submission(bot, receipt.submission_id, user_ref(interaction), status, text, author),
        )

    @app_commands.command(name="list", description="All leaderboards, their devices and deadlines")
    async def list_(self, interaction: discord.Interaction) -> None:
        await defer(interaction)
        boards = await call(self.ctx.service.list_leaderboards, viewer=user_ref(interaction))
        await send(interaction, Reply(content=list_text(boards)))

    @app_commands.command(name="show", description="The top of a leaderboard, per device, with a chart")
    @app_commands.describe(leaderboard="The leaderboard", device="Only this device (default: every device)")
    @app_commands.autocomplete(leaderboard=_leaderboards, device=_devices)
    async def show(self, interaction: discord.Interaction, leaderboard: str, device: str | None = None) -> None:
        await defer(interaction)
        bot = self.ctx
        me = user_ref(interaction)
        rankings = await call(leaderboard_rankings, bot.service, leaderboard, parse_devices(device), me)
        rows = bot.settings.leaderboard_rows
        top = [replace(r, entries=r.entries[:rows]) for r in rankings]
        history = await call(score_histories, bot.service, leaderboard, [r.device for r in rankings], me)
        png = await call(score_chart_png, leaderboard, history)
        files = (File(f"{leaderboard}-best-scores.png", png),) if png else ()
        await send(interaction, Reply(content=show_text(leaderboard, top), files=files))

    @app_commands.command(name="mine", description="Your submissions to a leaderboard")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def mine(self, interaction: discord.Interaction, leaderboard: str) -> None:
        await defer(interaction)
        subs = await call(self.ctx.service.user_submissions, user_ref(interaction), leaderboard)
        await send(interaction, Reply(content=submissions_text(leaderboard, subs)))

    @app_commands.command(name="task", description="A leaderboard's problem: its description and files")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def task(self, interaction: discord.Interaction, leaderboard: str) -> None:
        await defer(interaction)
        view = await call(self.ctx.service.task, leaderboard, viewer=user_ref(interaction))
        await send(interaction, task_reply(view))

    @app_commands.command(name="template", description="A starter file for a leaderboard, in a language")
    @app_commands.describe(language="pytorch, triton, cuda-inline, cuda, … (what the leaderboard offers)")
    @app_commands.autocomplete(leaderboard=_leaderboards, language=_languages)
    async def template(self, interaction: discord.Interaction, leaderboard: str, language: str) -> None:
        await defer(interaction)
        tpl = await call(self.ctx.service.template, leaderboard, language, viewer=user_ref(interaction))
        await send(
            interaction,
            Reply(
                content=f"Starter file for **{tpl.leaderboard}** ({tpl.language}): edit it, then "
                f"`/leaderboard submit leaderboard:{tpl.leaderboard}` with it attached.",
                files=(File(tpl.file_name, tpl.content.encode()),),
            ),
        )

    @app_commands.command(name="submission", description="One of your submissions: status, results, logs, code")
    @app_commands.describe(submission_id="The submission number (#N in its status message)")
    async def submission(self, interaction: discord.Interaction, submission_id: int) -> None:
        await defer(interaction)
        bot = self.ctx
        details = await call(bot.service.submission_details, submission_id, user_ref(interaction))
        reply = report(details)
        code = File(details.status.file_name, details.code.encode())
        await send(interaction, Reply(content=reply.content, files=(code, *reply.files)), overflow_name="report.txt")

    @app_commands.command(name="standings", description="Standings: shared ranks, 95% intervals, held-out coverage")
    @app_commands.describe(
        leaderboard="The leaderboard",
        device="Only this device (default: every device)",
        final="The frozen final standings, made after the deadline's system tests (default: live)",
    )
    @app_commands.autocomplete(leaderboard=_leaderboards, device=_devices)
    async def standings(
        self, interaction: discord.Interaction, leaderboard: str, device: str | None = None, final: bool = False
    ) -> None:
        await defer(interaction)
        text = await call(
            standings_reply, self.ctx.service, leaderboard, parse_devices(device), final, user_ref(interaction)
        )
        await send(interaction, Reply(content=text))

    @app_commands.command(name="hack", description="Send an input hack against a board's top entries (issue 35)")
    @app_commands.describe(
        leaderboard="The leaderboard (its problem declares a hack_space)",
        case='The case as JSON, each parameter of generate_input: {"rows": 3, "cols": 33, "seed": 5}',
    )
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def hack(
        self, interaction: discord.Interaction, leaderboard: str, case: app_commands.Range[str, 1, 2000]
    ) -> None:
        await defer(interaction)
        text = await call(hack_reply, self.ctx.service, user_ref(interaction), leaderboard, case)
        await send(interaction, Reply(content=text))

    @app_commands.command(name="join", description="Join a private leaderboard with an invite code")
    @app_commands.describe(code="The invite code the organisers gave you (kci_…); only you see this command")
    async def join(self, interaction: discord.Interaction, code: app_commands.Range[str, 1, 200]) -> None:
        await defer(interaction)
        joined = await call(self.ctx.service.join, user_ref(interaction), code)
        again = "You were in it already." if joined.already else "You're in."
        shown = f"**{joined.leaderboard}** shows in `/leaderboard list` for you now, and you can submit to it."
        await send(interaction, Reply(content=f"{again} {shown}"))
