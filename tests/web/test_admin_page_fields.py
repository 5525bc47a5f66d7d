"""/admin offers what `kernelcup admin` and the admin API do (issue 31): hide and show a board, set its rate limit
or put it back to the server's default, with a clear error for a limit that is not one."""

from __future__ import annotations

from test_pages import csrf_of, sign_in
from web_world import World


def post(world: World, **form: str) -> tuple[int, str]:
    page = world.client.get("/admin").text
    r = world.client.post("/admin", data={**form, "csrf": csrf_of(page)})
    return r.status_code, r.text


def test_hide_show_and_rate_limit_from_the_admin_page(world: World) -> None:
    sign_in(world, world.admin)
    status, text = post(world, action="hide", leaderboard="add")
    assert status == 200 and "add is hidden: admins and invited members see it." in text
    assert [b.name for b in world.service.list_leaderboards()] == []  # the public list no longer has it
    status, text = post(world, action="show", leaderboard="add")
    assert status == 200 and "add is shown to everyone." in text and world.service.leaderboard("add").visible

    status, text = post(world, action="rate_limit", leaderboard="add", per_hour="5")
    assert status == 200 and "add: rate limit 5 per hour." in text and "<td>5/hour</td>" in text
    assert world.service.leaderboard("add").rate_limit_per_hour == 5
    status, text = post(world, action="rate_limit", leaderboard="add", per_hour="lots")
    assert status == 422 and "A rate limit is a number of submissions per hour from 1 to 1000000" in text
    status, text = post(world, action="rate_limit", leaderboard="add", per_hour="0")
    assert status == 422 and "&#39;0&#39; is not." in text
    status, text = post(world, action="rate_limit", leaderboard="add", per_hour="")
    assert status == 200 and "add: rate limit the server&#39;s default." in text
    assert world.service.leaderboard("add").rate_limit_per_hour is None


def test_the_audit_filter_asks_for_the_same_date_format(world: World) -> None:
    sign_in(world, world.admin)
    page = world.client.get("/admin/moderation").text
    assert "Since (YYYY-MM-DD HH:MM, in UTC, like 2026-12-31 18:00)" in page
    bad = world.client.get("/admin/moderation", params={"since": "yesterday"}).text
    assert "The since &#39;yesterday&#39; is not a date and time: write it as YYYY-MM-DD HH:MM, in UTC" in bad
    assert "is not a date" not in world.client.get("/admin/moderation", params={"since": "2020-01-01 00:00"}).text
