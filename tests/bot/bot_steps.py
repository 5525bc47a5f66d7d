"""Shared steps of the bot tests: submitting through the slash command and serving the queue."""

from __future__ import annotations

from typing import Any

from bot_fakes import launcher as fake_launcher

from leaderboards.queue import JobQueue
from leaderboards.worker import Worker, WorkerSettings

ADMIN_ROLE = "kernelcup-admin"
GUILD_ID = 1_100_000_000_000_000_001
"""The server the bot serves (``DISCORD_GUILD_IDS``); other servers in a test are someone else's."""
STATUS_INTERVAL = 60.0
"""Longer than SimCord's settle timeout, so a follower parks between polls and tests step it with advance_time."""

GOOD = b"def custom_kernel(data):\n    return [x + 1 for x in data[0]]\n"


async def submit(world: Any, who: Any, *, file: tuple[str, bytes] = ("kernel.py", GOOD), **options: Any) -> Any:
    options = {"leaderboard": "addone", "mode": "test", "device": "cpu", **options}
    options = {k: v for k, v in options.items() if v is not None}
    return await who.slash(world.channel, "leaderboard submit", file=file, **options)


async def serve_queue(world: Any, launcher: Any = None) -> list:
    """Run a worker until the queue is empty (in the test's task: the bot only watches the database)."""
    launcher = launcher or fake_launcher()
    settings = WorkerSettings(poll_s=0.01, heartbeat_s=1.0, lease_s=30.0, backoff_base_s=0.0)
    return await Worker(world.service, lambda _device: launcher, settings).run(once=True)


def runner_online(world: Any, *devices: str) -> None:
    """A live worker for ``devices`` (all when none), as a worker process registers itself."""
    JobQueue(world.service.db).register_worker(f"worker-{'-'.join(devices) or 'all'}", list(devices))


def raised(world: Any) -> list[BaseException]:
    """The errors commands raised on purpose (the tree's handler answered them); SimCord re-raises any left unread."""
    return [getattr(e, "original", e) for e in world.env.errors]
