"""Renaming a live leaderboard or moving its deadline into the past (issue 37), through the admin API and the admin
page, on SQLite and PostgreSQL: the first try says what it affects (409 needs_force; the page asks to confirm), the
forced one applies, and the audit log names the token's account, the old and the new value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from test_pages import csrf_of, ranked, sign_in
from web_world import World, error_of

from leaderboards.models import AuditLog

PATCH = "/api/v1/admin/leaderboards/add"


def last_audit(world: World) -> AuditLog | None:
    with world.service.db.transaction() as s:
        row = s.scalar(select(AuditLog).where(AuditLog.action == "update_leaderboard").order_by(AuditLog.id.desc()))
        if row is not None:
            s.expunge(row)
        return row


def test_the_api_refuses_a_live_rename_with_what_it_affects_until_forced(world: World) -> None:
    ranked(world, world.ann, 500.0)
    queued = world.submit(world.bob, mode="ranked")
    assert queued.status_code == 202  # not served: a queued job
    r = world.client.patch(PATCH, headers=world.auth(world.admin), json={"name": "add-final"})
    assert r.status_code == 409 and error_of(r)["code"] == "needs_force"
    assert "1 queued or running job and 1 ranked entry (of ann, bob)" in error_of(r)["message"]
    assert world.client.get("/api/v1/leaderboards/add").status_code == 200 and last_audit(world) is None

    r = world.client.patch(PATCH, headers=world.auth(world.admin), json={"name": "add-final", "force": True})
    assert r.status_code == 200 and r.json()["changed"] == ["name"] and r.json()["leaderboard"]["name"] == "add-final"
    assert world.client.get("/api/v1/leaderboards/add").status_code == 404
    ranking = world.client.get("/api/v1/leaderboards/add-final/rankings", params={"device": "cpu"}).json()
    assert [e["user_name"] for e in ranking["entries"]] == ["ann"]
    audit = last_audit(world)
    assert audit is not None and audit.actor.startswith("local:root (token #")
    assert audit.detail["old"] == {"name": "add"} and audit.detail["new"] == {"name": "add-final"}
    assert audit.detail["forced_while_live"] is True


def test_the_api_refuses_a_live_deadline_in_the_past_until_forced(world: World) -> None:
    ranked(world, world.ann, 500.0)
    past = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    r = world.client.patch(PATCH, headers=world.auth(world.admin), json={"deadline": past})
    assert r.status_code == 409 and "moving its deadline into the past" in error_of(r)["message"]
    assert world.client.get("/api/v1/leaderboards/add").json()["is_open"]
    r = world.client.patch(PATCH, headers=world.auth(world.admin), json={"deadline": past, "force": True})
    assert r.status_code == 200 and not r.json()["leaderboard"]["is_open"]
    audit = last_audit(world)
    assert audit is not None and audit.detail["new"]["deadline"] == datetime.fromisoformat(past).isoformat()


def test_the_admin_page_asks_to_confirm_a_live_change_and_applies_it_when_confirmed(world: World) -> None:
    ranked(world, world.ann, 500.0)
    sign_in(world, world.admin)
    token = csrf_of(world.client.get("/admin").text)
    form = {"action": "update", "leaderboard": "add", "new_name": "add-2", "deadline": "", "csrf": token}
    r = world.client.post("/admin", data=form)
    assert r.status_code == 409
    assert "0 queued or running jobs and 1 ranked entry (of ann)" in r.text and "Confirm" in r.text
    assert world.service.leaderboard("add").name == "add"  # asked, not applied
    confirm = csrf_of(r.text)
    r = world.client.post("/admin", data={**form, "csrf": confirm, "force": "true"})
    assert r.status_code == 200 and "add-2 updated: name." in r.text
    audit = last_audit(world)
    assert audit is not None and audit.detail["new"] == {"name": "add-2"} and audit.detail["forced_while_live"]
    # A deadline in the form's UTC format, on a board nobody is live on any more (closing needs no confirmation
    # where nothing is queued, running or ranked: here ann's entry is still ranked, so it asks again).
    closing = {"action": "update", "leaderboard": "add-2", "deadline": "2020-01-01 00:00", "csrf": confirm}
    r = world.client.post("/admin", data=closing)
    assert r.status_code == 409 and "moving its deadline into the past (2020-01-01 00:00 UTC)" in r.text


def test_the_admin_page_asks_for_the_one_date_format_and_explains_a_bad_date(world: World) -> None:
    sign_in(world, world.admin)
    page = world.client.get("/admin").text
    assert "New deadline (YYYY-MM-DD HH:MM, in UTC, like 2026-12-31 18:00)" in page
    form = {"action": "update", "leaderboard": "add", "deadline": "31/12/2030", "csrf": csrf_of(page)}
    r = world.client.post("/admin", data=form)
    assert r.status_code == 422, r.status_code
    assert "The deadline &#39;31/12/2030&#39; is not a date and time: write it as YYYY-MM-DD HH:MM, in UTC" in r.text
    assert world.service.leaderboard("add").deadline.year != 2030
