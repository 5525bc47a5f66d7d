"""``GET /api/v1/leaderboards/{name}/history`` and the leaderboard page's chart (issue 37), on SQLite and
PostgreSQL: whatever is stored, one answer is a bounded page of series with a bounded number of points each (and so
bounded in bytes), made of the steps where a best improved; out-of-range parameters are 422s."""

from __future__ import annotations

import json

import pytest
from helpers import run_result
from web_world import GOOD, World, error_of

from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.viewing import HISTORY_MAX_POINTS, HISTORY_MAX_SERIES
from runners.contract import Mode, Verdict

HISTORY = "/api/v1/leaderboards/add/history"


def ranked(service: LeaderboardService, user: str, score: float) -> int:
    receipt = service.submit(UserRef(user), "k.py", GOOD + f"# {user} {score}\n".encode(), "add", ["cpu"], Mode.RANKED)
    job = receipt.jobs[0].job_id
    service.record_run(job, run_result([score], mode=Mode.RANKED))
    service.record_run(job, run_result([score], verdict=Verdict.ACCEPTED, mode=Mode.RANKED), secret=True)
    return receipt.submission_id


@pytest.fixture
def busy(world: World) -> World:
    """15 users; the best of them improved 45 times, each of the others 3 times (and submitted worse ones too)."""
    service = LeaderboardService(
        world.service.db,
        world.service.settings.model_copy(
            update={"max_pending_jobs_per_user": 1000, "ranked_rate_limit_per_hour": None}
        ),
    )
    for i in range(45):
        ranked(service, "grinder", 500.0 - i)
    for u in range(14):
        for score in (900.0, 950.0, 800.0, 990.0, 700.0 + u):
            ranked(service, f"user{u}", score)
    return world


def test_an_answer_is_bounded_in_series_points_and_bytes(busy: World) -> None:
    r = busy.client.get(HISTORY, params={"device": "cpu", "limit": 4, "points": 10})
    assert r.status_code == 200
    body = r.json()
    assert body["total"] == 15 and body["limit"] == 4 and body["max_points"] == 10
    assert [s["rank"] for s in body["series"]] == [1, 2, 3, 4]
    assert all(len(s["points"]) <= 10 for s in body["series"]) and len(body["best"]) <= 10
    grinder = body["series"][0]
    assert grinder["user_name"] == "grinder" and grinder["thinned"] and len(grinder["points"]) == 10
    assert grinder["points"][0]["score_ns"] == pytest.approx(500.0)
    assert grinder["points"][-1]["score_ns"] == pytest.approx(456.0)  # the ranked best, always kept
    # Only improvements: each other user stored 900, 800 and their 70x (950 and 990 were no improvement).
    assert [round(p["score_ns"]) for p in body["series"][1]["points"]] == [900, 800, 700]
    points = len(body["best"]) + sum(len(s["points"]) for s in body["series"])
    assert points <= 10 * 5
    assert len(r.content) <= 200 * points + 2000  # bytes follow from points: ~150 per point, no hidden payload

    default = busy.client.get(HISTORY, params={"device": "cpu"}).json()
    assert len(default["series"]) == 10 and default["total"] == 15
    assert max(len(s["points"]) for s in default["series"]) == 45  # under the default cap: every step
    biggest = busy.client.get(HISTORY, params={"device": "cpu", "limit": HISTORY_MAX_SERIES, "points": 2})
    assert all(len(s["points"]) <= 2 for s in biggest.json()["series"])
    assert len(json.dumps(biggest.json())) < 15 * 2 * 200 + 2000


def test_pages_and_out_of_range_parameters(busy: World) -> None:
    second = busy.client.get(HISTORY, params={"device": "cpu", "limit": 10, "offset": 10}).json()
    assert [s["rank"] for s in second["series"]] == [11, 12, 13, 14, 15]
    for params in (
        {"limit": HISTORY_MAX_SERIES + 1},
        {"limit": 0},
        {"points": HISTORY_MAX_POINTS + 1},
        {"points": 1},
        {"offset": -1},
        {"offset": 2**63},
    ):
        r = busy.client.get(HISTORY, params={"device": "cpu", **params})
        assert r.status_code == 422, params
        assert error_of(r)["code"] == "invalid_field"


def test_the_leaderboard_page_draws_the_bounded_best_over_time(busy: World) -> None:
    page = busy.client.get("/leaderboards/add", params={"device": "cpu"})
    assert page.status_code == 200
    # The chart's dots are the leaderboard's steps: grinder's 45 improvements, each a new best for everyone.
    assert page.text.count("<circle") == 45
