"""/admin/moderation (issue 29): an admin's page of the audit log, moderated entries, rejudges and alerts; each form
is the API's route behind the pages' CSRF check."""

from __future__ import annotations

import pytest
from web_world import GOOD, World, csrf_of

from runners.launchers.fake import FakeLauncher, accepted_result

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def sign_in(world: World, token: str) -> None:
    page = world.client.get("/signin")
    r = world.client.post(
        "/signin", data={"token": token, "csrf": csrf_of(page.text), "next": "/me"}, follow_redirects=False
    )
    assert r.status_code == 303, r.text


def test_an_admin_moderates_rejudges_and_reads_the_audit_log_on_the_page(world: World) -> None:
    c = world.client
    r = world.submit(world.bob, mode="ranked", content=GOOD)
    sid = int(r.json()["submission_id"])
    world.serve(FakeLauncher(lambda req: accepted_result(req, 700.0)))
    sign_in(world, world.ann)
    assert c.get("/admin/moderation").status_code == 403
    sign_in(world, world.admin)
    page = c.get("/admin/moderation")
    assert page.status_code == 200 and "Audit log" in page.text and "create_leaderboard" in page.text
    token = csrf_of(page.text)
    r = c.post("/admin/moderation", data={"action": "moderate", "submission_id": str(sid), "state": "quarantined",
                                          "reason": "times nothing", "csrf": token})  # fmt: skip
    assert r.status_code == 200 and f"Submission {sid} of bob is now quarantined." in r.text
    assert "times nothing" in r.text  # in the moderated entries and the audit log
    assert world.service.ranking("add", "cpu").entries == ()
    r = c.post("/admin/moderation", data={"action": "moderate", "submission_id": str(sid), "state": "nonsense",
                                          "reason": "x", "csrf": token})  # fmt: skip
    assert r.status_code == 422 and "Unknown moderation state" in r.text
    r = c.post("/admin/moderation", data={"action": "rejudge", "leaderboard": "add", "top": "5", "csrf": token})
    assert r.status_code == 200 and "add: queued 0 rejudges" in r.text  # its only entry is quarantined
    r = c.post("/admin/moderation", data={"action": "rejudge", "leaderboard": "add", "csrf": "forged"})
    assert r.status_code == 403
    filtered = c.get("/admin/moderation", params={"action": "moderate", "leaderboard": "add"})
    assert filtered.status_code == 200 and f"submission:{sid}" in filtered.text and "create_leaderboard" not in (
        filtered.text.split("Audit log", 1)[1])  # fmt: skip
    assert c.get("/admin/moderation", params={"leaderboard": "nope"}).status_code == 422


def test_the_author_reads_why_on_their_own_page(world: World) -> None:
    r = world.submit(world.bob, mode="ranked", content=GOOD)
    sid = int(r.json()["submission_id"])
    world.serve()
    world.service.moderate(sid, "quarantined", actor="admin", reason="reads the expected output")
    sign_in(world, world.bob)
    page = world.client.get("/me").text
    assert "quarantined: out of every ranking while a moderator looks: reads the expected output" in page
