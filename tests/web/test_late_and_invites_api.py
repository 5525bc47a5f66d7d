"""After the deadline and private boards through the API and the pages (issue 29): practice after the deadline is
listed apart and ranks nowhere until an admin admits it; standings pages show ranks, intervals, coverage and notes;
invite codes let a user into a hidden board, and nothing of a hidden board is answered from a cache to anyone else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from web_world import World, csrf_of, error_of

from runners.launchers.fake import FakeLauncher, accepted_result

API = "/api/v1"


def sign_in(world: World, token: str) -> None:
    page = world.client.get("/signin")
    r = world.client.post("/signin", data={"token": token, "csrf": csrf_of(page.text), "next": "/"},
                          follow_redirects=False)  # fmt: skip
    assert r.status_code == 303, r.text


def ranked(world: World, token: str, median: float) -> int:
    code = f"def custom_kernel(d):\n    return d  # {median}\n".encode()
    r = world.submit(token, mode="ranked", devices="cpu", content=code)
    assert r.status_code == 202, r.text
    world.serve(FakeLauncher(lambda req: accepted_result(req, median)))
    return int(r.json()["submission_id"])


def test_practice_after_the_deadline_its_list_and_an_admission(world: World) -> None:
    c = world.client
    ranked(world, world.ann, 1000.0)
    world.service.update_leaderboard("add", deadline=datetime.now(UTC) - timedelta(minutes=1), force=True)
    late = ranked(world, world.bob, 500.0)
    rankings = c.get(f"{API}/leaderboards/add/rankings", params={"device": "cpu"}).json()
    assert [e["user_name"] for e in rankings["entries"]] == ["ann"]
    listed = c.get(f"{API}/leaderboards/add/late").json()
    assert listed["total"] == 1 and listed["entries"][0]["submission_id"] == late
    assert listed["entries"][0]["note"] == "after the deadline: unranked practice"
    assert listed["entries"][0]["jobs"][0]["ranked_score_ns"] > 0
    mine = c.get(f"{API}/me/submissions", headers=world.auth(world.bob)).json()
    assert mine[0]["late"] == "after the deadline: unranked practice"
    page = c.get("/leaderboards/add/late")
    assert page.status_code == 200 and "bob" in page.text and "unranked practice" in page.text

    admit = f"{API}/admin/submissions/{late}/admit"
    assert c.post(admit, headers=world.auth(world.ann), json={"reason": "me"}).status_code == 403
    r = c.post(admit, headers=world.auth(world.admin), json={"reason": ""})
    assert r.status_code == 422 and error_of(r)["field"] == "reason"
    r = c.post(admit, headers=world.auth(world.admin), json={"reason": "the queue was down at the deadline"})
    assert r.status_code == 200, r.text
    assert r.json()["note"].startswith("late, admitted by local:root") and r.json()["note"].endswith("the deadline")
    standings = c.get(f"{API}/leaderboards/add/standings", params={"device": "cpu"}).json()
    assert [(row["user_name"], bool(row["note"])) for row in standings["rows"]] == [("bob", True), ("ann", False)]

    world.service.competition_tick()  # the deadline's housekeeping freezes the final standings
    page = c.get("/leaderboards/add/standings", params={"device": "cpu"})
    assert page.status_code == 200
    final = page.text.split('id="final-title"')[1].split('id="live-title"')[0]
    assert "Frozen" in final and "bob" in final and "late, admitted by local:root" in final and "–" in final
    assert "No entries." in c.get("/leaderboards/add/standings", params={"device": "H100"}).text
    board = c.get("/leaderboards/add").text
    assert 'href="/leaderboards/add/standings"' in board and 'href="/leaderboards/add/late"' in board
    sign_in(world, world.bob)
    assert "late, admitted by" in c.get("/me").text


def test_an_invite_code_opens_a_hidden_board_to_its_member_only(world: World) -> None:
    c = world.client
    c.app.state.rankings_cache.ttl_s = 60.0  # type: ignore[attr-defined]  # a member's answer must not be shared
    world.service.update_leaderboard("add", visible=False)
    as_ann, as_admin = world.auth(world.ann), world.auth(world.admin)
    assert c.post(f"{API}/admin/leaderboards/add/invites", headers=as_ann, json={}).status_code == 403
    made = c.post(f"{API}/admin/leaderboards/add/invites", headers=as_admin, json={"uses": 1, "expires_days": 1})
    assert made.status_code == 201, made.text
    code = made.json()["code"]
    listed = c.get(f"{API}/admin/invites", headers=as_admin)
    assert code not in listed.text and listed.json()[0]["prefix"] == code[:8]

    r = c.post(f"{API}/join", headers=as_ann, json={"code": "kci_" + "x" * 300})
    assert r.status_code == 422 and error_of(r)["field"] == "code"
    r = c.post(f"{API}/join", headers=as_ann, json={"code": "kci_guess"})
    assert r.status_code == 422 and error_of(r)["code"] == "invalid_invite" and "unknown" in error_of(r)["message"]
    assert c.post(f"{API}/join", json={"code": code}).status_code == 401
    r = c.post(f"{API}/join", headers=as_ann, json={"code": code})
    assert r.status_code == 200 and r.json() == {"leaderboard": "add", "already": False}

    assert [b["name"] for b in c.get(f"{API}/leaderboards", headers=as_ann).json()] == ["add"]
    assert c.get(f"{API}/leaderboards").json() == []
    rankings = f"{API}/leaderboards/add/rankings"
    assert c.get(rankings, headers=as_ann, params={"device": "cpu"}).status_code == 200
    assert c.get(rankings, params={"device": "cpu"}).status_code == 404  # not from the cache the member filled
    assert c.get(rankings, headers=world.auth(world.bob), params={"device": "cpu"}).status_code == 404
    assert c.get(f"{API}/leaderboards/add/standings", headers=as_ann, params={"device": "cpu"}).status_code == 200
    assert world.submit(world.ann).status_code == 202
    assert world.submit(world.bob).status_code == 404

    sign_in(world, world.ann)
    assert c.get("/leaderboards/add").status_code == 200
    assert c.get("/leaderboards/add/standings").status_code == 200
    assert c.get("/leaderboards/add/templates/pytorch").status_code == 200
    sign_in(world, world.bob)
    assert c.get("/leaderboards/add").status_code == 404  # not from the page cache ann's view filled
    assert c.get("/leaderboards/add/templates/pytorch").status_code == 404
    form = c.get("/join")
    assert form.status_code == 200 and 'name="code"' in form.text
    refused = c.post("/join", data={"code": code, "csrf": csrf_of(form.text)})
    assert refused.status_code == 422 and "all it allows" in refused.text and code not in refused.text
    again = c.post(f"{API}/admin/leaderboards/add/invites", headers=as_admin, json={"expires_days": None}).json()
    assert again["invite"]["expires_at"] is None
    joined = c.post("/join", data={"code": again["code"], "csrf": csrf_of(form.text)}, follow_redirects=False)
    assert joined.status_code == 303 and joined.headers["location"] == "/leaderboards/add"
    assert c.get("/leaderboards/add").status_code == 200
    revoked = c.delete(f"{API}/admin/invites/{again['invite']['invite_id']}", headers=as_admin)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]


def test_a_hidden_boards_members_for_admins_only_through_the_api_and_the_admin_page(world: World) -> None:
    c = world.client
    world.service.update_leaderboard("add", visible=False)
    as_ann, as_bob, as_admin = world.auth(world.ann), world.auth(world.bob), world.auth(world.admin)
    members = f"{API}/admin/leaderboards/add/members"
    code = c.post(f"{API}/admin/leaderboards/add/invites", headers=as_admin, json={"uses": 3}).json()["code"]
    assert c.post(f"{API}/join", headers=as_ann, json={"code": code}).status_code == 200
    assert c.get(members).status_code == 401
    assert c.get(members, headers=as_ann).status_code == 403  # a member is no admin
    assert c.post(members, headers=as_ann, json={"user": "bob"}).status_code == 403
    assert c.delete(f"{members}/local:ann", headers=as_ann).status_code == 403
    listed = c.get(members, headers=as_admin)
    assert listed.status_code == 200 and code not in listed.text
    [row] = listed.json()
    assert (row["user"], row["user_name"], row["invite_prefix"]) == ("local:ann", "ann", code[:8])
    added = c.post(members, headers=as_admin, json={"user": "discord:77", "reason": "a judge"})
    assert added.status_code == 201 and added.json()["invite_id"] is None
    assert c.post(members, headers=as_admin, json={"user": "discord:0"}).status_code == 422
    gone = c.delete(f"{members}/local:ann", headers=as_admin, params={"reason": "left"})
    assert gone.status_code == 200 and gone.json()["user"] == "local:ann"
    assert c.get(f"{API}/leaderboards/add/rankings", headers=as_ann, params={"device": "cpu"}).status_code == 404
    again = c.delete(f"{members}/local:ann", headers=as_admin)
    assert again.status_code == 404 and "no member of 'add'" in error_of(again)["message"]
    assert c.get(f"{API}/admin/leaderboards/nope/members", headers=as_admin).status_code == 404

    sign_in(world, world.bob)  # not an admin: the page refuses, whatever the form
    assert "for admins" in c.get("/admin").text
    sign_in(world, world.admin)
    page = c.get("/admin")
    assert "Members of add" in page.text and "discord:77" in page.text and "added by an admin" in page.text
    assert code not in page.text and f"{code[:8]}…" in page.text

    def post(**form: str):
        return c.post("/admin", data={**form, "csrf": csrf_of(c.get("/admin").text)})

    made = post(action="invite_create", leaderboard="add", uses="2", days="")
    new_code = made.text.split("only its hash is kept): ")[1].split("<")[0].strip()
    assert made.status_code == 200 and new_code.startswith("kci_")
    assert new_code not in c.get("/admin").text  # shown once, in the answer to the form that made it
    invite_id = world.service.list_invites("add")[0].invite_id
    assert "is withdrawn" in post(action="invite_revoke", invite_id=str(invite_id)).text
    bad = post(action="invite_create", leaderboard="add", days="soon")
    assert bad.status_code == 422 and "valid for a number of days" in bad.text
    assert "bob is in add (added by an admin)" in post(action="member_add", leaderboard="add", user="bob").text
    assert "bob is out of add" in post(action="member_remove", leaderboard="add", user="local:bob").text
    assert c.get(f"{API}/leaderboards/add/rankings", headers=as_bob, params={"device": "cpu"}).status_code == 404
    refused = post(action="member_add", leaderboard="add", user="")
    assert refused.status_code == 422 and "Give the user" in refused.text
