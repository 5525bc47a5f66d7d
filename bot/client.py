"""The Discord client: the command tree, its sync, and the bot's background tasks.

``KernelcupBot`` holds the service (the one API of the core) and the settings; the command groups in
``bot/commands/`` reach both through ``interaction.client``. Nothing connects in the constructor:
``setup_hook`` (run by discord.py after login) registers and syncs the commands and starts the
background tasks (announcements, and the in-process worker when ``kernelcup bot`` runs one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from bot.peaks import parse_peaks, peak_lookup
from bot.replies import on_tree_error
from bot.settings import BotSettings

if TYPE_CHECKING:
    from leaderboards.service import LeaderboardService

log = logging.getLogger(__name__)

Background = Callable[[], Awaitable[Any]]
"""A coroutine factory run as a task for the bot's lifetime (e.g. the in-process worker)."""


class KernelcupBot(discord.Client):
    def __init__(
        self,
        service: LeaderboardService,
        settings: BotSettings,
        *,
        background: Sequence[Background] = (),
    ) -> None:
        # Slash commands need no privileged intents (no message content, no member list).
        super().__init__(intents=discord.Intents.default())
        self.service = service
        self.settings = settings
        self.tree = app_commands.CommandTree(self)
        self.tree.on_error = on_tree_error  # type: ignore[method-assign]
        self.peak_for = peak_lookup(parse_peaks(settings.device_peaks))
        self._background = list(background)
        self._tasks: list[asyncio.Task[Any]] = []
        self._served: list[asyncio.Task[Any]] = []
        """The tasks of ``background`` (the in-process worker), awaited on a graceful stop."""
        self.followers: dict[int, asyncio.Task[None]] = {}
        """Live status followers by submission id (one per submission, even if asked twice)."""

    async def setup_hook(self) -> None:
        from bot.announce import announce_loop
        from bot.commands.admin import AdminCommands
        from bot.commands.leaderboard import LeaderboardCommands
        from bot.commands.token import token_command

        self.tree.add_command(LeaderboardCommands())
        self.tree.add_command(AdminCommands())
        self.tree.add_command(token_command)
        if self.settings.guild_id is not None:
            guild = discord.Object(id=self.settings.guild_id)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
        else:
            await self.tree.sync()
        if self.settings.announce_channel_id is not None:
            self._start(announce_loop(self), "announcements")
        for factory in self._background:
            self._served.append(self._start(factory(), getattr(factory, "__name__", "background")))

    def _start(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        task.set_name(f"kernelcup-{name}")
        task.add_done_callback(_log_crash)
        self._tasks.append(task)
        return task

    async def background_done(self) -> None:
        """Wait until the ``background`` tasks (the in-process worker) have ended, e.g. after their stop event."""
        await asyncio.gather(*self._served, return_exceptions=True)

    def follow(self, submission_id: int, coro: Awaitable[None]) -> asyncio.Task[None]:
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
