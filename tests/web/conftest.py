"""The API against its ASGI app through httpx (FastAPI's TestClient), on SQLite and again on PostgreSQL.

``world`` is a service with one leaderboard (``add``: devices cpu and H100, Python) and tokens for two
competitors and an admin; ``serve`` runs a worker with the fake launcher until the queue is empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers import PostgresSchema, future, make_problem, migrated_sqlite_template, postgres_reachable, sqlite_database

from leaderboards.db import Database
from leaderboards.results import Scope, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.fake import FakeLauncher
from web.app import create_app
from web.settings import WebSettings

GOOD = b"def custom_kernel(data):\n    return data\n"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return migrated_sqlite_template(tmp_path_factory.mktemp("sqlite-template"))


@pytest.fixture(scope="session")
def postgres_schema() -> Iterator[PostgresSchema]:
    reason = postgres_reachable()
    if reason:
        pytest.skip(reason)
    schema = PostgresSchema()
    schema.create()
    yield schema
    schema.drop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        db = sqlite_database(request.getfixturevalue("sqlite_template"), tmp_path / "kernelcup.sqlite3")
        yield db
        db.dispose()
        return
    schema: PostgresSchema = request.getfixturevalue("postgres_schema")
    db = schema.database()
    try:
        yield db
    finally:
        db.dispose()
        schema.truncate()


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

    def serve(self, launcher: FakeLauncher | None = None) -> None:
        launcher = launcher or FakeLauncher()
        settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0, backoff_base_s=0.0)
        asyncio.run(Worker(self.service, lambda _d: launcher, settings).run(once=True))
        self.client.app.state.rankings_cache.clear()  # type: ignore[attr-defined]


@pytest.fixture
def core_settings(tmp_path: Path) -> CoreSettings:
    return CoreSettings(_env_file=None, database_url=None, data_dir=tmp_path / "data", rate_limit_per_hour=None)


@pytest.fixture
def world(database: Database, core_settings: CoreSettings, tmp_path: Path) -> Iterator[World]:
    service = LeaderboardService(database, core_settings)
    problems = tmp_path / "problems"
    service.create_leaderboard(make_problem(problems), deadline=future(), devices=["cpu", "H100"])
    settings = WebSettings(_env_file=None, problems_dir=problems, sse_poll_s=0.02, rankings_cache_s=0)
    app = create_app(service, settings)
    ann = service.create_token(UserRef("ann")).token
    bob = service.create_token(UserRef("bob")).token
    admin = service.create_token(UserRef("root"), scopes=[Scope.ADMIN], actor="test").token
    with TestClient(app, raise_server_exceptions=False) as client:
        yield World(service, client, problems, ann, bob, admin)
