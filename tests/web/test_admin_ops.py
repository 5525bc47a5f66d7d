"""Admin routes (the operations of /admin in Discord, each recorded under the acting user and token), health,
readiness, metrics, and the walk that checks no secret leaves the server."""

from __future__ import annotations

import logging
import re

import pytest
from helpers import write_problem, write_problem_set
from sqlalchemy import select
from web_world import World, error_of

from leaderboards.models import AuditLog, Leaderboard
from leaderboards.queue import JobQueue


def audit(world: World) -> list[tuple[str, str, str]]:
    with world.service.db.transaction() as s:
        return [(a.actor, a.action, a.target) for a in s.scalars(select(AuditLog).order_by(AuditLog.id))]


def test_a_sync_says_what_it_changes_with_the_old_and_new_values(world: World) -> None:
    """A newcomer's walk, 2026-11-29: a sync that put back a deadline an admin had moved said only "deadline"."""
    c, admin = world.client, world.auth(world.admin)
    write_problem(world.problems, "mul")
    write_problem_set(world.problems, [{"directory": "mul", "deadline": "2099-01-01", "devices": ["cpu"]}], name="s")
    assert c.post("/api/v1/admin/sync", headers=admin, json={"path": "s.yaml"}).json()["changes"] == {}
    write_problem_set(world.problems, [{"directory": "mul", "deadline": "2099-02-01", "devices": ["cpu"]}], name="s")
    r = c.post("/api/v1/admin/sync", headers=admin, json={"path": "s.yaml"})
    assert [(i["action"], i["changed"]) for i in r.json()["items"]] == [("updated", ["deadline"])], r.json()
    (said,) = r.json()["changes"]["mul"]
    assert said.startswith("deadline 2099-01-01") and "-> 2099-02-01" in said, said


def test_admin_operations_are_recorded_with_the_acting_user(world: World) -> None:
    c, admin = world.client, world.auth(world.admin)
    token_id = world.service.authenticate(world.admin).token_id
    actor = f"local:root (token #{token_id})"
    write_problem(world.problems, "mul")
    write_problem_set(world.problems, [{"directory": "mul", "deadline": "2099-01-01", "devices": ["cpu"]}], name="s")
    r = c.post("/api/v1/admin/sync", headers=admin, json={"path": "s.yaml"})
    assert r.json()["items"] == [
        {"leaderboard": "mul", "action": "created", "changed": [], "reasons": [], "ranking_reset": False}
    ]
    assert r.json()["applied"] is True and r.json()["changes"] == {}
    r = c.post("/api/v1/admin/sync", headers=admin, json={"path": "../../etc/passwd"})
    assert r.status_code == 422 and "outside the problems folder" in error_of(r)["message"]
    r = c.post(
        "/api/v1/admin/leaderboards",
        headers=admin,
        json={"problem": "mul", "name": "mul-2", "deadline": "2099-06-01T12:00:00", "devices": ["cpu", "A100"]},
    )
    assert r.status_code == 201 and r.json()["devices"] == ["cpu", "A100"]
    r = c.patch("/api/v1/admin/leaderboards/mul-2", headers=admin, json={"visible": False, "devices": ["A100"]})
    assert r.json()["changed"] == ["devices", "visible"]
    assert c.get("/api/v1/leaderboards/mul-2").status_code == 404  # hidden from the public
    assert "mul-2" in [b["name"] for b in c.get("/api/v1/admin/leaderboards", headers=admin).json()]
    assert c.post("/api/v1/admin/leaderboards/add/pause", headers=admin).json()["paused"] is True
    assert world.submit(world.ann).status_code == 409
    assert c.post("/api/v1/admin/leaderboards/add/resume", headers=admin).json()["paused"] is False
    r = c.put("/api/v1/admin/leaderboards/add/rate-limit", headers=admin, json={"per_hour": 5})
    assert r.json()["rate_limit_per_hour"] == 5
    r = c.put("/api/v1/admin/users/local:ann/ban", headers=admin, json={"reason": "spam"})
    assert r.json()["is_banned"] and world.submit(world.ann).status_code == 403
    assert c.delete("/api/v1/admin/users/ann/ban", headers=admin).json()["is_banned"] is False
    assert c.put("/api/v1/admin/users/discord:42/program", headers=admin, json={"program": True}).json()["is_program"]
    sid = world.submit(world.ann).json()["submission_id"]
    assert c.delete(f"/api/v1/admin/submissions/{sid}", headers=admin).json()["action"] == "deleted"
    r = c.delete("/api/v1/admin/leaderboards/mul-2", headers=admin, params={"confirm": "mul"})
    assert r.status_code == 422 and error_of(r)["field"] == "confirm"
    assert c.delete("/api/v1/admin/leaderboards/mul-2", headers=admin, params={"confirm": "mul-2"}).status_code == 200
    stats = c.get("/api/v1/admin/stats", headers=admin, params={"days": 7}).json()
    assert stats["queue"]["jobs"]["cpu"]["cancelled"] == 1 and stats["usage"]["submissions"] == 1
    assert stats["usage"]["impossible_runs"] == 0 and stats["usage"]["impossible_latest"] == []
    tokens = c.get("/api/v1/admin/tokens", headers=admin).json()
    assert {t["user_name"] for t in tokens} == {"ann", "bob", "root"} and all("token" not in t for t in tokens)
    bob = next(t for t in tokens if t["user_name"] == "bob")
    assert c.delete(f"/api/v1/admin/tokens/{bob['token_id']}", headers=admin).json()["revoked_at"]
    assert c.get("/api/v1/me", headers=world.auth(world.bob)).status_code == 401
    acted = [(a, action) for a, action, _ in audit(world) if a == actor]
    assert [action for _, action in acted] == [
        "create_leaderboard",
        "create_leaderboard",
        "update_leaderboard",
        "pause",
        "resume",
        "set_rate_limit",
        "ban",
        "unban",
        "mark_program",
        "delete_submission",
        "delete_leaderboard",
        "revoke_token",
    ]


def test_my_tokens(world: World) -> None:
    c, auth = world.client, world.auth(world.ann)
    r = c.post("/api/v1/me/tokens", headers=auth, json={"name": "laptop", "expires": "12h"})
    assert r.status_code == 201
    new = r.json()
    assert new["token"].startswith("kc_") and new["info"]["name"] == "laptop" and new["info"]["scopes"] == ["submit"]
    assert c.get("/api/v1/me", headers=world.auth(new["token"])).json()["user_name"] == "ann"
    listed = c.get("/api/v1/me/tokens", headers=auth).json()
    assert len(listed) == 2 and all(new["token"] not in str(t) for t in listed)
    assert c.delete(f"/api/v1/me/tokens/{new['info']['token_id']}", headers=world.auth(world.bob)).status_code == 404
    assert c.delete(f"/api/v1/me/tokens/{new['info']['token_id']}", headers=auth).status_code == 200
    assert c.get("/api/v1/me", headers=world.auth(new["token"])).status_code == 401
    r = c.post("/api/v1/me/tokens", headers=auth, json={"expires": "soon"})
    assert r.status_code == 422 and error_of(r)["field"] == "expires"


def test_a_token_from_the_api_never_outlives_the_one_that_made_it(world: World) -> None:
    c = world.client
    day = c.post("/api/v1/me/tokens", headers=world.auth(world.ann), json={"expires": "1d"}).json()
    auth, expires_at = world.auth(day["token"]), day["info"]["expires_at"]
    r = c.post("/api/v1/me/tokens", headers=auth, json={"expires": "never"})
    assert r.status_code == 422 and error_of(r)["field"] == "expires" and "expires" in error_of(r)["message"]
    for asked in ("365d", ""):
        r = c.post("/api/v1/me/tokens", headers=auth, json={"expires": asked})
        assert r.status_code == 201 and r.json()["info"]["expires_at"] == expires_at
    for asked in ("999999999d", "99999999999d"):  # past the date range: a field error, not a 500
        r = c.post("/api/v1/me/tokens", headers=auth, json={"expires": asked})
        assert r.status_code == 422 and error_of(r)["field"] == "expires", r.text
    ann = world.service.authenticate(world.ann).user
    world.service.settings.max_tokens_per_user = len(world.service.list_tokens(ann))
    r = c.post("/api/v1/me/tokens", headers=auth, json={})
    assert r.status_code == 429 and error_of(r)["code"] == "too_many_tokens"


def test_health_readiness_and_metrics(world: World) -> None:
    c = world.client
    assert c.get("/healthz").json() == {"status": "ok"}
    r = c.get("/readyz")
    assert r.status_code == 503 and r.json() == {
        "ready": False,
        "database": "ok",
        "schema": "ok",
        "devices_without_worker": ["cpu", "H100"],
        "workers_per_device": {"cpu": 0, "H100": 0},
        "unhealthy_workers": 0,
    }
    JobQueue(world.service.db).register_worker("w1", ["cpu", "h100"])
    assert c.get("/readyz").status_code == 200
    world.submit(world.ann, mode="ranked")
    world.serve()
    world.submit(world.ann)
    text = c.get("/metrics").text
    assert 'kernelcup_queue_depth{device="cpu"} 1.0' in text
    assert 'kernelcup_jobs{device="cpu",status="succeeded"} 1.0' in text
    assert "kernelcup_workers_alive 1.0" in text
    assert re.search(r'kernelcup_job_wait_seconds_bucket\{device="cpu",le="\+Inf"\} 1\.0', text)
    assert re.search(r'kernelcup_job_run_seconds_count\{device="cpu"\} 1\.0', text)
    assert re.search(
        r'kernelcup_api_requests_total\{method="POST",route="/api/v1/submissions",status="202"\} 2\.0', text
    )
    assert 'kernelcup_api_request_seconds_bucket{le="0.05",method="GET",route="/readyz"}' in text
    assert "kernelcup_api_event_streams 0.0" in text


def test_made_up_methods_and_paths_make_no_new_metrics_series(world: World) -> None:
    c = world.client
    for i in range(20):
        c.request(f"FOO{i}", "/")
        c.request(f"BAR{i}", f"/api/v1/nope{i}")
        c.get(f"/static/nope{i}.css")
        c.get(f"/nope/{i}")
        c.get(f"/api/v1/submissions/{i}/nope")
    text = c.get("/metrics").text
    series = [line for line in text.splitlines() if line.startswith("kernelcup_api_requests_total{")]
    methods = set(re.findall(r'method="([^"]*)"', "\n".join(series)))
    routes = set(re.findall(r'route="([^"]*)"', "\n".join(series)))
    assert methods <= {"GET", "other"}, methods
    assert not any("nope" in r for r in routes), routes
    assert len(series) <= 6, series


# -- no secret leaves the server -----------------------------------------------------------------------------------

CANARIES = {
    "GITHUB_TOKEN": "ghp_canaryGITHUB0000000000000000000000",
    "MODAL_TOKEN_SECRET": "as-canaryMODAL000000000000",
    "DISCORD_TOKEN": "canary.DISCORD.token000",
}


def fill(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)


def test_no_secret_in_any_response_or_log_line(
    world: World, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.DEBUG)
    c = world.client
    sid = world.submit(world.ann, mode="ranked").json()["submission_id"]
    world.serve()
    world.submit(world.ann)
    with world.service.db.transaction() as s:
        seeds = [str(x) for x in s.scalars(select(Leaderboard.secret_seed))]
    secrets = [world.ann, world.bob, world.admin, str(world.service.db.engine.url), *CANARIES.values(), *seeds]
    secrets.append(world.service.db.engine.url.render_as_string(hide_password=False))
    ids = {
        "name": "add",
        "language": "pytorch",
        "device": "cpu",
        "submission_id": str(sid),
        "token_id": "1",
        "user": "local:bob",
        "alert_id": "1",
        "invite_id": "1",
        "batch_id": "1",
        "hack_id": "1",
    }
    bodies = {"/api/v1/admin/sync": {}, "/api/v1/me/tokens": {"name": "x"}}
    seen = 0
    paths = c.get("/api/openapi.json").json()["paths"]  # every route the app serves, with its methods
    assert len(paths) >= 28
    for path, operations in paths.items():
        for method in sorted(m.upper() for m in operations):
            for token in (None, world.ann, world.admin):
                headers = world.auth(token) if token else {}
                url = fill(path, ids)
                params = {"device": "cpu", "confirm": "nope"}
                if method == "GET":
                    r = c.get(url, headers=headers, params=params)
                elif method == "DELETE":
                    if "/submissions/" in url or "/tokens/" in url or "/leaderboards/" in url:
                        continue  # destructive: checked in their own tests; here the reads and refusals matter
                    r = c.delete(url, headers=headers, params=params)
                else:
                    r = c.request(method, url, headers=headers, json=bodies.get(path, {}), params=params)
                seen += 1
                body = r.text
                for secret in secrets:
                    if token is not None and secret == token:
                        continue  # a request's own token is never echoed either: checked below
                    assert secret not in body, (method, url, r.status_code)
                if token is not None:
                    assert token not in body, (method, url)
                assert "Traceback" not in body
    assert seen > 60
    created = c.post("/api/v1/me/tokens", headers=world.auth(world.ann), json={}).json()["token"]
    logs = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    for secret in [*secrets, created]:
        assert secret not in logs


def test_creating_or_changing_one_board_checks_its_devices_and_reference_as_a_sync_does(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A red team, 2026-11-29: the create route opened a board on a device no runner serves, with a reference that
    raised, which the sync route refuses."""
    from runners.contract import RunRequest, RunResult, Verdict

    c, admin = world.client, world.auth(world.admin)
    ran: list[RunRequest] = []

    def check(request: RunRequest) -> RunResult:
        ran.append(request)
        return RunResult(verdict=Verdict.RUNTIME_ERROR, mode=request.mode, message="generate_input raised: boom")

    state = c.app.state  # type: ignore[attr-defined]
    monkeypatch.setattr(state, "reference_check", lambda: check)
    monkeypatch.setattr(state, "device_check", lambda d: None if d in ("cpu", "A100") else f"no runner serves {d}")
    write_problem(world.problems, "mul")
    board = {"problem": "mul", "name": "mul-2", "deadline": "2099-06-01T12:00:00"}
    r = c.post("/api/v1/admin/leaderboards", headers=admin, json={**board, "devices": ["cpu", "NOPE9"]})
    assert r.status_code == 422 and "devices: no runner serves NOPE9" in error_of(r)["message"] and not ran
    r = c.post("/api/v1/admin/leaderboards", headers=admin, json={**board, "devices": ["cpu"]})
    assert r.status_code == 422 and "boom" in error_of(r)["message"] and len(ran) == 1
    assert c.get("/api/v1/admin/leaderboards", headers=admin).json()[-1]["name"] != "mul-2"  # nothing was made
    r = c.post("/api/v1/admin/leaderboards", headers=admin, json={**board, "devices": ["cpu"], "skip_run": True})
    assert r.status_code == 201 and len(ran) == 1
    r = c.patch("/api/v1/admin/leaderboards/mul-2", headers=admin, json={"devices": ["NOPE9"]})
    assert r.status_code == 422 and "no runner serves NOPE9" in error_of(r)["message"]
    r = c.patch("/api/v1/admin/leaderboards/mul-2", headers=admin, json={"problem": "mul"})
    assert r.status_code == 422 and "boom" in error_of(r)["message"] and len(ran) == 2
    r = c.patch("/api/v1/admin/leaderboards/mul-2", headers=admin, json={"problem": "mul", "skip_run": True})
    assert r.status_code == 200 and len(ran) == 2
