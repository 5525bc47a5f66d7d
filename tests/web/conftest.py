"""The API against its ASGI app through httpx (FastAPI's TestClient), on SQLite and again on PostgreSQL.

``world`` is a service with one leaderboard (``add``: devices cpu and H100, Python) and tokens for two
competitors and an admin; ``serve`` runs a worker with the fake launcher until the queue is empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers import PostgresSchema, future, make_problem, migrated_sqlite_template, postgres_reachable, sqlite_database
from web_world import World

from leaderboards.db import Database
from leaderboards.results import Scope, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from web.app import create_app
from web.settings import WebSettings


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


@pytest.fixture
def core_settings(tmp_path: Path) -> CoreSettings:
    # Duplicates (the same file again answers with the earlier submission) have their own tests; here each
    # request is a submission of its own.
    return CoreSettings(
        _env_file=None, database_url=None, data_dir=tmp_path / "data", rate_limit_per_hour=None, duplicate_window_s=0
    )


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Each phase's report on the test item (``rep_call``): a browser test's fixture screenshots a failure."""
    outcome = yield
    setattr(item, f"rep_{outcome.get_result().when}", outcome.get_result())
