"""What a hidden leaderboard must not leak through the API and the pages: its entries' code after the deadline is
for its members only, and its members (signed in on the web) download its problem folder from the board's page."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime, timedelta

from test_late_and_invites_api import ranked, sign_in
from web_world import World

from leaderboards.results import UserRef

API = "/api/v1"


def hidden_with_members(world: World, *members: str) -> None:
    world.service.update_leaderboard("add", visible=False, code_public_after_deadline=True)
    code = world.service.create_invite("add", actor="admin", uses=len(members)).code
    for name in members:
        world.service.join(UserRef(name), code)


def test_a_hidden_boards_code_after_the_deadline_is_for_its_members_only(world: World) -> None:
    carol = world.service.create_token(UserRef("carol")).token
    hidden_with_members(world, "ann", "carol")
    entry = ranked(world, world.ann, 1000.0)
    world.service.update_leaderboard("add", deadline=datetime.now(UTC) - timedelta(minutes=1), force=True)
    code = f"{API}/submissions/{entry}/code"
    assert world.client.get(code).status_code == 404
    assert world.client.get(code, headers=world.auth(world.bob)).status_code == 404
    member = world.client.get(code, headers=world.auth(carol))
    assert member.status_code == 200 and "custom_kernel" in member.json()["code"] and member.json()["public"]
    sign_in(world, carol)  # and on the web
    assert "custom_kernel" in world.client.get(f"/submissions/{entry}").text
    sign_in(world, world.bob)
    assert world.client.get(f"/submissions/{entry}").status_code == 404


def test_a_member_downloads_a_hidden_boards_problem_folder_from_its_page(world: World) -> None:
    hidden_with_members(world, "ann")
    sign_in(world, world.ann)
    assert 'href="/leaderboards/add/problem.zip"' in world.client.get("/leaderboards/add").text
    r = world.client.get("/leaderboards/add/problem.zip")
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(r.content)).namelist()
    assert any(n.endswith("/task.yml") for n in names)
    sign_in(world, world.bob)
    assert world.client.get("/leaderboards/add/problem.zip").status_code == 404
    world.client.cookies.clear()
    assert world.client.get("/leaderboards/add/problem.zip").status_code == 404
