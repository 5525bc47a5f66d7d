"""The database goes away while the API runs: 503 in the one shape where a route needs it, /healthz still
answers, /readyz says why, and everything recovers by itself when the database is back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from helpers import POSTGRES_URL, PostgresSchema, Proxy, future, make_problem, schema_url

from leaderboards.db import Database, make_engine
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from web.app import create_app
from web.settings import WebSettings

pytestmark = pytest.mark.postgres


@pytest.fixture
def proxied(postgres_schema: PostgresSchema) -> Iterator[tuple[Proxy, Database]]:
    url = make_engine(POSTGRES_URL).url
    proxy = Proxy(url.port or 5432, url.host or "127.0.0.1")
    through = schema_url(postgres_schema.name).replace(f"{url.host}:{url.port or 5432}", f"127.0.0.1:{proxy.port}")
    db = Database(make_engine(through, connect_args={"connect_timeout": 2}, pool_timeout=2))
    yield proxy, db
    proxy.stop()
    db.dispose()
    postgres_schema.truncate()


def test_database_down_then_back(proxied: tuple[Proxy, Database], tmp_path) -> None:
    proxy, db = proxied
    service = LeaderboardService(db, CoreSettings(_env_file=None, data_dir=tmp_path))
    service.create_leaderboard(make_problem(tmp_path), deadline=future(), devices=["cpu"])
    token = service.create_token(UserRef("ann")).token
    app = create_app(service, WebSettings(_env_file=None, rankings_cache_s=0))
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.get("/api/v1/leaderboards").status_code == 200
        proxy.stop()  # the database server is gone; pooled connections are cut
        for path in ("/api/v1/leaderboards", "/api/v1/leaderboards/add/rankings", "/api/v1/me"):
            r = c.get(path, headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 503, (path, r.text)
            assert r.json()["error"]["code"] == "database_unavailable" and r.headers["retry-after"] == "5"
            assert str(proxy.port) not in r.text and "Traceback" not in r.text
        assert c.get("/healthz").json() == {"status": "ok"}
        ready = c.get("/readyz")
        assert ready.status_code == 503 and ready.json()["database"].startswith("unreachable")
        proxy.start()  # back, on the same address
        assert c.get("/api/v1/leaderboards").status_code == 200
        r = c.post(
            "/api/v1/submissions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": ("k.py", b"def custom_kernel(d):\n    return d\n")},
            data={"leaderboard": "add"},
        )
        assert r.status_code == 202
