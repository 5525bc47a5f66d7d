"""The world of the API tests (``tests/web/conftest.py`` builds it): a service, a client of the ASGI app, tokens.
Imported by the test modules as ``from web_world import ...`` (not from conftest: several test folders have one)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

from fastapi.testclient import TestClient

from leaderboards.service import LeaderboardService
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.fake import FakeLauncher

GOOD = b"def custom_kernel(data):\n    return data\n"


def csrf_of(html: str) -> str:
    """The CSRF token of a page's form."""
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, "no CSRF field on the page"
    return match.group(1)


def error_of(response) -> dict:
    """The error of an answer, checked to have the one shape."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "field"}, body
    return body["error"]


@dataclass
class World:
    service: LeaderboardService
    client: TestClient
    problems: Path
    ann: str
    bob: str
    admin: str

    def auth(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def submit(self, token: str, *, name: str = "k.py", content: bytes = GOOD, **fields: object):
        data = {"leaderboard": "add", "devices": "cpu", "mode": "test", **fields}
        data = {k: v for k, v in data.items() if v is not None}
        return self.client.post(
            "/api/v1/submissions", headers=self.auth(token), files={"file": (name, content)}, data=data
        )

    def serve(self, launcher: FakeLauncher | None = None, *, clear_cache: bool = True) -> None:
        launcher = launcher or FakeLauncher()
        settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0, backoff_base_s=0.0)
        asyncio.run(Worker(self.service, lambda _d: launcher, settings).run(once=True))
        if clear_cache:
            self.client.app.state.rankings_cache.clear()  # type: ignore[attr-defined]


HACK_FIXTURE = Path(__file__).parents[1] / "leaderboards" / "hack_fixture"
"""The input-hack fixture problem (rows x cols, a hack space): its reference and task.yml make leaderboard 'triple'."""


def with_hack_board(world: World) -> World:
    """``world`` with the leaderboard 'triple' (the hack fixture's problem, on the CPU)."""
    import shutil

    from helpers import future

    from leaderboards.problems import load_problem

    folder = world.problems / "triple"
    folder.mkdir(parents=True)
    for rel in ("reference.py", "task.yml"):
        shutil.copy(HACK_FIXTURE / rel, folder / rel)
    world.service.create_leaderboard(load_problem(folder), deadline=future(), devices=["cpu"])
    return world


def run_hacks(world: World, launcher: FakeLauncher) -> None:
    """Run every queued input hack through ``launcher``, as a worker's hack runner does, then drop the app's
    cached rankings and pages so the next request sees the outcome."""
    from collections.abc import Callable
    from typing import Any

    from leaderboards.board_hacks import HackRunner

    runner = HackRunner(world.service, lambda _d: launcher, 10.0)

    async def db(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    async def all_of_them() -> None:
        while await runner.run_one("w1", (), db):
            pass

    asyncio.run(all_of_them())
    world.client.app.state.rankings_cache.clear()  # type: ignore[attr-defined]
    world.client.app.state.pages_cache.clear()  # type: ignore[attr-defined]
