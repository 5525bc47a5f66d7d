"""What the bot's command groups and tasks use, handed to each in its constructor (as python-discord's cogs take
the bot): the service (the one API of the core), the settings, and the bot's own per-process state.

``KernelcupBot`` builds one ``BotContext`` and gives it to ``LeaderboardCommands``, ``AdminCommands``,
``token_command``, the status followers and the announcement loop; none of them reaches back into the client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.cooldowns import Cooldowns
from bot.settings import BotSettings

if TYPE_CHECKING:
    from leaderboards.problem_rules import DeviceCheck
    from leaderboards.service import LeaderboardService
    from leaderboards.sync import ReferenceCheck

Follow = Callable[[int, Coroutine[Any, Any, None]], "asyncio.Task[None]"]
"""Run a status follower for a submission unless one already runs (``KernelcupBot.follow``)."""


@dataclass
class BotContext:
    """The dependencies of the bot's commands. Tests may swap a field (e.g. the service) on a running bot."""

    service: LeaderboardService
    settings: BotSettings
    follow: Follow
    cooldowns: Cooldowns
    reference_check: Callable[[], ReferenceCheck] | None = None
    """What ``/admin sync`` runs new or changed references with (None: it skips that check)."""
    device_check: DeviceCheck | None = None
    """Device name -> why no launcher serves it (``/admin sync`` warns); None: not checked."""
