"""The Discord client: the command tree, its sync, and the bot's background tasks.

``KernelcupBot`` builds one ``BotContext`` (the service, the one API of the core; the settings; its cooldowns and
followers) and hands it to the command groups in ``bot/commands/`` and its tasks in their constructors: none of them
reaches back into the client. Nothing connects in the constructor:
``setup_hook`` (run by discord.py after login) registers and syncs the commands and starts the
background tasks (announcements, and the in-process worker when ``kernelcup bot`` runs one).

The bot serves only the servers in ``DISCORD_GUILD_IDS``: its commands are synced to those servers alone (the
global list is emptied at start, so a version that synced globally leaves nothing behind), an interaction from
anywhere else is refused, and it leaves any other server it finds itself in. Its messages mention nobody unless
a message says so (``allowed_mentions``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from bot.announce import announce_loop
from bot.commands.admin import AdminCommands
from bot.commands.leaderboard import LeaderboardCommands
from bot.commands.submission import SubmissionCommands
from bot.commands.token import token_command
from bot.context import BotContext
from bot.cooldowns import Cooldowns
from bot.replies import Refused, on_tree_error
from bot.settings import BotSettings

if TYPE_CHECKING:
    from leaderboards.problem_rules import DeviceCheck
    from leaderboards.service import LeaderboardService
    from leaderboards.sync import ReferenceCheck

log = logging.getLogger(__name__)

Background = Callable[[], Awaitable[Any]]
"""A coroutine factory run as a task for the bot's lifetime (e.g. the in-process worker)."""


NOT_HERE = "This bot serves only its own servers; nothing was done."


class ServedTree(app_commands.CommandTree):
    """The command tree, answering only interactions from the configured servers (``DISCORD_GUILD_IDS``)."""

    def __init__(self, client: discord.Client, settings: BotSettings) -> None:
        super().__init__(client)
        self.settings = settings

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        if interaction.guild_id is not None and interaction.guild_id in self.settings.guild_ids:
            return True
        if interaction.type is discord.InteractionType.autocomplete:
            return False  # offers nothing; there is no message to show under a half-typed option
        raise Refused(NOT_HERE)


class KernelcupBot(discord.Client):
    def __init__(
        self,
        service: LeaderboardService,
        settings: BotSettings,
        *,
        background: Sequence[Background] = (),
        reference_check: Callable[[], ReferenceCheck] | None = None,
        device_check: DeviceCheck | None = None,
    ) -> None:
        """``reference_check`` and ``device_check`` are what ``/admin sync`` checks a problem set with, as
        ``kernelcup problems sync`` does (the composition root builds them; without them it skips those checks)."""
        # Slash commands need no privileged intents (no message content, no member list). No message pings anyone
        # unless it allows it itself (announcements mention the user they are about).
        super().__init__(intents=discord.Intents.default(), allowed_mentions=discord.AllowedMentions.none())
        self.context = BotContext(
            service=service,
            settings=settings,
            follow=self.follow,
            cooldowns=Cooldowns(),
            reference_check=reference_check,
            device_check=device_check,
        )
        """What the command groups and tasks get (``bot.context``)."""
        self.tree = ServedTree(self, settings)
        self.tree.on_error = on_tree_error  # type: ignore[method-assign]
        self._background = list(background)
        self._tasks: list[asyncio.Task[Any]] = []
        self._served: list[asyncio.Task[Any]] = []
        """The tasks of ``background`` (the in-process worker), awaited on a graceful stop."""
        self.followers: dict[int, asyncio.Task[None]] = {}
        """Live status followers by submission id (one per submission, even if asked twice)."""

    @property
    def service(self) -> LeaderboardService:
        return self.context.service

    @property
    def settings(self) -> BotSettings:
        return self.context.settings

    async def setup_hook(self) -> None:
        self.tree.add_command(LeaderboardCommands(self.context))
        self.tree.add_command(AdminCommands(self.context))
        self.tree.add_command(SubmissionCommands(self.context))
        self.tree.add_command(token_command(self.context))
        guilds = [discord.Object(id=g) for g in self.settings.guild_ids]
        for guild in guilds:
            self.tree.copy_global_to(guild=guild)
        self.tree.clear_commands(guild=None)
        await self.tree.sync()  # an empty global list: commands an older, globally synced version left are removed
        for guild in guilds:
            await self.tree.sync(guild=guild)
        if self.settings.announce_channel_id is not None:
            self._start(announce_loop(self, self.context), "announcements")
        for factory in self._background:
            self._served.append(self._start(factory(), getattr(factory, "__name__", "background")))

    async def on_ready(self) -> None:
        for guild in list(self.guilds):
            await self._leave_unless_served(guild)
        self._check_admin_roles()

    async def on_guild_join(self, guild: discord.Guild) -> None:
        await self._leave_unless_served(guild)

    async def on_guild_available(self, guild: discord.Guild) -> None:
        await self._leave_unless_served(guild)

    async def _leave_unless_served(self, guild: discord.Guild) -> None:
        if guild.id in self.settings.guild_ids:
            return
        log.warning("leaving server %r (%s): it is not in DISCORD_GUILD_IDS", guild.name, guild.id)
        try:
            await guild.leave()
        except discord.HTTPException:
            log.exception("could not leave server %s; its interactions are refused meanwhile", guild.id)

    def _check_admin_roles(self) -> None:
        """Say at start which configured admin role is in none of the served servers (a typo locks admins out)."""
        served = [g for g in self.guilds if g.id in self.settings.guild_ids]
        for role_id in self.settings.admin_role_ids:
            if served and not any(g.get_role(role_id) for g in served):
                log.warning("DISCORD_ADMIN_ROLE_IDS: role %s is in none of the servers of DISCORD_GUILD_IDS", role_id)

    def _start(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        task.set_name(f"kernelcup-{name}")
        task.add_done_callback(_log_crash)
        self._tasks.append(task)
        return task

    async def background_done(self) -> None:
        """Wait until the ``background`` tasks (the in-process worker) have ended, e.g. after their stop event."""
        await asyncio.gather(*self._served, return_exceptions=True)

    def follow(self, submission_id: int, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run a status follower for ``submission_id`` unless one already runs."""
        running = self.followers.get(submission_id)
        if running is not None and not running.done():
            if asyncio.iscoroutine(coro):
                coro.close()
            return running
        task = asyncio.ensure_future(coro)
        task.set_name(f"kernelcup-follow-{submission_id}")
        task.add_done_callback(_log_crash)
        task.add_done_callback(lambda _t: self.followers.pop(submission_id, None))
        self.followers[submission_id] = task
        return task

    async def close(self) -> None:
        tasks = [*self._tasks, *self.followers.values()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await super().close()


def _log_crash(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s stopped with an error", task.get_name(), exc_info=task.exception())
