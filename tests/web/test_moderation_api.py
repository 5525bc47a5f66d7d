"""The admin API of moderation, the audit log, rejudges and alerts (issue 29), and what an author and everyone else
see of them."""

from __future__ import annotations

import asyncio

from web_world import World, error_of

from leaderboards.rejudge import RejudgeRunner
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.fake import FakeLauncher

FAST = b"def custom_kernel(data):\n    return data\n"


def board(world: World) -> list[str]:
    ranking = world.client.get("/api/v1/leaderboards/add/rankings", params={"device": "cpu"}).json()
    return [e["user_name"] for e in ranking["entries"]]


def ranked_entry(world: World, token: str) -> int:
    sid = world.submit(token, content=FAST, mode="ranked").json()["submission_id"]
    world.serve()
    return int(sid)


def test_an_admin_quarantines_an_entry_the_author_reads_why_and_the_audit_log_has_it(world: World) -> None:
    c, admin = world.client, world.auth(world.admin)
    sid = ranked_entry(world, world.ann)
    assert board(world) == ["ann"]
    r = c.post(f"/api/v1/admin/submissions/{sid}/moderation", headers=admin,
               json={"state": "quarantined", "reason": "times an empty stream"})  # fmt: skip
    assert r.status_code == 200 and r.json()["state"] == "quarantined" and r.json()["by"].startswith("local:root")
    assert board(world) == []
    mine = c.get("/api/v1/me/submissions", headers=world.auth(world.ann)).json()
    assert mine[0]["moderation"] == "quarantined" and "times an empty stream" in mine[0]["moderation_note"]
    status = c.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()["status"]
    assert status["moderation"] == "quarantined"
    r = c.post(f"/api/v1/admin/submissions/{sid}/moderation", headers=admin, json={"state": "bogus", "reason": "x"})
    assert r.status_code == 422
    r = c.post(f"/api/v1/admin/submissions/{sid}/moderation", headers=admin, json={"state": "flagged", "reason": "x"})
    assert r.status_code == 422 and "can become hacked or cleared" in error_of(r)["message"]
    listed = c.get("/api/v1/admin/moderation", headers=admin, params={"state": "quarantined"}).json()
    assert [m["submission_id"] for m in listed] == [sid]
    page = c.get("/api/v1/admin/audit", headers=admin, params={"action": "moderate", "leaderboard": "add"}).json()
    assert [(e["action"], e["target"], e["detail"]["to"]) for e in page["entries"]] == [
        ("moderate", f"submission:{sid}", "quarantined")]  # fmt: skip
    r = c.post(f"/api/v1/admin/submissions/{sid}/moderation", headers=world.auth(world.ann),
               json={"state": "cleared", "reason": "mine"})  # fmt: skip
    assert r.status_code == 403


def test_the_audit_log_filters_pages_and_withholds_secrets(world: World) -> None:
    c, admin = world.client, world.auth(world.admin)
    for reason in ("one", "two", "three"):
        c.put("/api/v1/admin/users/local:bob/ban", headers=admin, json={"reason": reason})
        c.delete("/api/v1/admin/users/local:bob/ban", headers=admin)
    first = c.get("/api/v1/admin/audit", headers=admin, params={"action": "ban", "limit": 2}).json()
    assert [e["detail"]["reason"] for e in first["entries"]] == ["three", "two"]
    rest = c.get("/api/v1/admin/audit", headers=admin,
                 params={"action": "ban", "limit": 2, "before": first["next_before"]}).json()  # fmt: skip
    assert [e["detail"]["reason"] for e in rest["entries"]] == ["one"] and rest["next_before"] is None
    everything = c.get("/api/v1/admin/audit", headers=admin, params={"limit": 200}).json()["entries"]
    assert {"create_leaderboard", "ban", "unban"} <= {e["action"] for e in everything}
    creation = next(e for e in everything if e["action"] == "create_leaderboard")
    assert "secret_seed" not in str(creation) and str(world.service.task_snapshot("add").stored()) not in str(creation)
    assert c.get("/api/v1/admin/audit", headers=admin, params={"since": "2000-01-01T00:00:00Z"}).status_code == 200
    assert c.get("/api/v1/admin/audit", headers=admin, params={"actor": "nobody"}).json()["entries"] == []
    assert c.get("/api/v1/admin/audit", headers=admin, params={"limit": 201}).status_code == 422
    assert c.get("/api/v1/admin/audit", headers=world.auth(world.ann)).status_code == 403
    assert c.get("/api/v1/admin/audit").status_code == 401


def test_an_admin_rejudges_and_everyone_reads_the_drift(world: World) -> None:
    c, admin = world.client, world.auth(world.admin)
    sid = ranked_entry(world, world.ann)
    r = c.post("/api/v1/admin/leaderboards/add/rejudge", headers=admin, json={"top": 3, "device": "cpu"})
    assert r.status_code == 200 and [(x["submission_id"], x["status"]) for x in r.json()] == [(sid, "queued")]
    launcher = FakeLauncher()
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    runner = RejudgeRunner(world.service, lambda _d: launcher, 10.0)
    asyncio.run(Worker(world.service, lambda _d: launcher, settings, rejudges=runner).run(once=True))
    (done,) = c.get("/api/v1/admin/leaderboards/add/rejudges", headers=admin).json()
    assert done["status"] == "done" and done["drift"] == 0.0 and done["text"].endswith(": +0.0%")
    drift = c.get("/api/v1/leaderboards/add/drift", params={"device": "cpu"}).json()
    assert drift == [{"submission_id": sid, "note": done["text"]}]
    r = c.post("/api/v1/admin/leaderboards/add/rejudge", headers=admin, json={"top": 0})
    assert r.status_code == 422
    assert c.get("/api/v1/admin/alerts", headers=admin).json() == []
    r = c.post("/api/v1/admin/alerts/7/resolve", headers=admin, json={"reason": "x"})
    assert r.status_code == 404 and "no alert 7" in error_of(r)["message"]
