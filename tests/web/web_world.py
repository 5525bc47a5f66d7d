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
