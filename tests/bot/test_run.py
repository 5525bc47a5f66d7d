"""The bot's lifetime: background tasks (the in-process worker) start with it, end on their stop event, and
are cancelled when the bot closes."""

from __future__ import annotations

import asyncio

import pytest
from bot_fakes import launcher
from bot_steps import GOOD

from bot.client import KernelcupBot
from bot.run import queue_server, start_error
from leaderboards.results import UserRef
from leaderboards.worker import Worker, WorkerSettings

pytestmark = pytest.mark.anyio


async def test_background_tasks_start_after_login_and_are_awaited_or_cancelled(world) -> None:
    stop = asyncio.Event()
    ticks: list[int] = []

    async def ticking() -> None:
        while not stop.is_set():
            ticks.append(1)
            await asyncio.sleep(10)

    async def forever() -> None:
        await asyncio.sleep(3600)

    bot = KernelcupBot(world.service, world.bot.settings, background=[ticking])
    await world.env.restart_bot(bot)
    await world.env.advance_time(35)
    assert len(ticks) == 4
    stop.set()
    await world.env.advance_time(10)
    await asyncio.wait_for(bot.background_done(), timeout=5)
    assert len(ticks) == 4

    other = KernelcupBot(world.service, world.bot.settings, background=[forever])
    await world.env.restart_bot(other)
    [task] = [t for t in other._tasks if t.get_name() == "kernelcup-forever"]
    await other.close()
    assert task.cancelled()


async def test_queue_server_serves_the_queue_until_stopped(service) -> None:
    receipt = service.submit(UserRef("alice", 1), "kernel.py", GOOD, "addone", ["cpu"], "test")
    stop = asyncio.Event()
    settings = WorkerSettings(poll_s=0.01, heartbeat_s=1.0, lease_s=30.0, backoff_base_s=0.0)
    worker = Worker(service, lambda _device: launcher(), settings)
    task = asyncio.create_task(queue_server(worker, stop)())
    for _ in range(500):
        if service.submission_status(receipt.submission_id).done:
            break
        await asyncio.sleep(0.01)
    assert service.submission_status(receipt.submission_id).jobs[0].verdict == "accepted"
    stop.set()
    await asyncio.wait_for(task, timeout=10)
    assert service.queue_stats().workers == ()


def test_only_known_start_failures_are_explained() -> None:
    import discord

    assert "DISCORD_TOKEN" in str(start_error(discord.LoginFailure("Improper token has been passed.")))
    assert start_error(RuntimeError("boom")) is None
