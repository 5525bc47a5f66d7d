"""Running the bot for its lifetime: log in, serve, and (unless told not to) serve the queue in the same process.

``kernelcup bot`` (the composition root) builds the service and, unless ``--no-worker``, a worker, then calls
``run_bot``. A token Discord refuses ends it at once with ``BotStartError`` naming ``DISCORD_TOKEN``; nothing is
retried. SIGINT/SIGTERM stop the worker first (running jobs get its grace period, then go back to the queue)
and then log the bot out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import TYPE_CHECKING, Any

import aiohttp
import discord

from bot.client import Background, KernelcupBot
from bot.settings import BotSettings

if TYPE_CHECKING:
    from leaderboards.service import LeaderboardService
    from leaderboards.worker import Worker

log = logging.getLogger(__name__)


class BotStartError(Exception):
    """The bot cannot start (token refused, intents not enabled); the message says which setting to fix."""


def start_error(exc: BaseException) -> BotStartError | None:
    """The message for a start-up failure of discord.py, or None when it is not one we can explain."""
    if isinstance(exc, discord.LoginFailure):
        return BotStartError(
            "Discord refused the token in DISCORD_TOKEN (it is wrong, revoked or not a bot token). "
            "Copy the bot's token from the Discord developer portal (Bot -> Reset Token) into DISCORD_TOKEN."
        )
    if isinstance(exc, aiohttp.ClientConnectorError):  # DNS, refused, unreachable: before the token is even read
        reason = " ".join(str(exc.os_error.strerror or exc.os_error).split())
        return BotStartError(
            f"Discord cannot be reached at {exc.host}:{exc.port} ({reason}); check this machine's network, DNS, "
            "firewall and proxy (HTTPS_PROXY) for outgoing HTTPS to Discord"
        )
    if isinstance(exc, aiohttp.ClientError | TimeoutError):
        what = " ".join(str(exc).split()) or type(exc).__name__
        return BotStartError(
            f"the connection to Discord failed ({what}); check this machine's network and proxy (HTTPS_PROXY) for "
            "outgoing HTTPS to discord.com and its gateway"
        )
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return BotStartError("Discord refused the bot's intents; enable them in the developer portal (Bot -> Intents).")
    if isinstance(exc, discord.Forbidden) and exc.code == 50001:
        return BotStartError(
            "The bot cannot register its slash commands in a server of DISCORD_GUILD_IDS: invite it there with the "
            "'applications.commands' scope, or check DISCORD_GUILD_IDS."
        )
    return None


def queue_server(worker: Worker, stop: asyncio.Event) -> Background:
    """The in-process worker as a background task of the bot; ``stop`` ends it gracefully."""

    async def serve_queue() -> None:
        log.info("serving the queue in this process (worker %s)", worker.worker_id)
        await worker.run(stop)

    return serve_queue


async def run_bot(
    service: LeaderboardService, settings: BotSettings, *, worker: Worker | None = None, **checks: Any
) -> None:
    """Log in and serve until the bot is closed or the process gets SIGINT/SIGTERM. ``checks``: the problem-set
    checks of ``/admin sync`` (``reference_check``, ``device_check``; see ``KernelcupBot``)."""
    stop = asyncio.Event()
    background = [queue_server(worker, stop)] if worker is not None else []
    bot = KernelcupBot(service, settings, background=background, **checks)
    loop = asyncio.get_running_loop()
    grace = worker.settings.stop_grace_s if worker is not None else 0.0

    async def shutdown() -> None:
        stop.set()  # the worker finishes (or requeues) its jobs first: the bot's close() cancels what is left
        with contextlib.suppress(Exception):
            await asyncio.wait_for(bot.background_done(), timeout=grace + 5.0)
        await bot.close()

    stopping: list[asyncio.Task[None]] = []  # a reference, so the stopping task is not garbage-collected

    def on_signal() -> None:
        if stop.is_set():  # a second signal: stop now (the worker's jobs go back to the queue)
            stopping.append(loop.create_task(bot.close()))
            return
        log.info("stopping: the worker finishes its jobs (up to %.0f s), then the bot logs out", grace)
        stopping.append(loop.create_task(shutdown()))

    handled = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread, or not Unix
            loop.add_signal_handler(sig, on_signal)
            handled.append(sig)
    try:
        async with bot:
            await bot.start(settings.token.get_secret_value())
    except Exception as exc:
        error = start_error(exc)
        if error is None:
            raise
        raise error from None
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
