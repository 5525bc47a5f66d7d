"""Input hacks over the API (issue 35, ``web/routes/hacks.py``): any account posts a case against a board; out of
range is a 422 naming the field and its range; a worker runs it; the hacker reads per entry its verdict (never the
code nor the case), anyone reads the credits, and the board's page shows them. The runs are the fake launcher's:
the shape-keyed kernel fails a case whose rows are no multiple of 32 long (tests/leaderboards/test_board_hacks.py
runs the same fixture for real)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from web_world import HACK_FIXTURE, World, error_of, run_hacks, with_hack_board

from leaderboards.board_hacks import HackEntry, HackView
from runners.contract import Mode, RunRequest, RunResult, TestResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result
from web.routes.hacks import HackEntryOut, HackOut

FIXTURE = HACK_FIXTURE
SHAPE_KEYED = (FIXTURE / "shape_keyed.py").read_bytes()
HONEST = (FIXTURE / "honest.py").read_bytes()
CASE = {"rows": 3, "cols": 33, "seed": 5}


def respond(request: RunRequest) -> RunResult:
    """Ranked runs: the shape-keyed kernel fastest. A hack's test run: the shape-keyed kernel wrong off 32s."""
    if request.mode is not Mode.TEST:
        return accepted_result(request, 500.0 if request.submission.content == SHAPE_KEYED else 1000.0)
    (case,) = request.tests
    wrong = request.submission.content == SHAPE_KEYED and case["cols"] % 32 != 0
    verdict = Verdict.WRONG_ANSWER if wrong else Verdict.ACCEPTED
    return RunResult(verdict=verdict, mode=request.mode, tests=[TestResult(index=0, case=case, verdict=verdict)])


@pytest.fixture
def hw(world: World) -> World:
    return with_hack_board(world)


def test_a_hack_through_the_api_breaks_an_entry_and_credits_the_hacker(hw: World) -> None:
    w, c = hw, hw.client
    launcher = FakeLauncher(respond)
    ann = w.submit(w.ann, leaderboard="triple", mode="ranked", content=SHAPE_KEYED).json()["submission_id"]
    w.submit(w.admin, leaderboard="triple", mode="ranked", content=HONEST)
    w.serve(launcher)
    posted = c.post("/api/v1/leaderboards/triple/hacks", headers=w.auth(w.bob), json={"case": CASE})
    assert posted.status_code == 202, posted.text
    (queued,) = posted.json()["hacks"]
    assert (queued["status"], queued["device"], queued["user_name"]) == ("queued", "cpu", "bob")
    run_hacks(w, launcher)

    mine = c.get(f"/api/v1/hacks/{queued['hack_id']}", headers=w.auth(w.bob))
    assert mine.status_code == 200, mine.text
    body = mine.json()
    assert (body["status"], body["broken"]) == ("done", 1)
    assert [(e["submission_id"], e["rank"], e["user_name"], e["verdict"], e["broken"]) for e in body["entries"]] == [
        (ann, 1, "ann", "wrong answer", True), (ann + 1, 2, "root", "accepted", False)]  # fmt: skip
    assert c.get(f"/api/v1/hacks/{queued['hack_id']}", headers=w.auth(w.ann)).status_code == 404  # the author's only
    assert c.get(f"/api/v1/hacks/{queued['hack_id']}", headers=w.auth(w.admin)).status_code == 200
    listed = c.get("/api/v1/leaderboards/triple/hacks/mine", headers=w.auth(w.bob)).json()["hacks"]
    assert [h["hack_id"] for h in listed] == [queued["hack_id"]]

    credits = c.get("/api/v1/leaderboards/triple/hacks").json()  # public
    assert credits["line"] == "hacks: bob broke 1 entry"
    assert credits["credits"] == [{"user_name": "bob", "broken": 1, "text": "bob broke 1 entry"}]
    page = c.get("/leaderboards/triple").text
    assert "hacks: bob broke 1 entry" in page
    assert "hacks: bob broke 1 entry" in c.get("/leaderboards/triple/standings").text  # the standings page too
    ranking = c.get("/api/v1/leaderboards/triple/rankings", params={"device": "cpu"}).json()
    assert [e["user_name"] for e in ranking["entries"]] == ["root"]  # ann's entry left the ranking
    for text in (posted.text, mine.text, str(listed), str(credits), page):
        assert '"cols"' not in text and "cols=33" not in text  # no surface shows the case
    source = SHAPE_KEYED.decode().splitlines()[-1].strip()
    assert source not in mine.text  # nor the entry's code


@pytest.mark.parametrize(
    ("case", "field", "words"),
    [
        ({"rows": 1000, "cols": 3, "seed": 1}, "case.rows", "rows: 1000 is outside 1 .. 256"),
        ({"rows": 3, "cols": 3, "seed": 1, "dtype": "x"}, "case.dtype", "is not a parameter of this problem"),
        ({"rows": 3, "cols": 3}, "case.seed", "seed: is missing"),
        ({"rows": 200, "cols": 200, "seed": 1}, "case", "above this problem's cap of 16,384"),
    ],
)
def test_an_out_of_range_hack_is_a_422_naming_the_field(
    hw: World, case: dict[str, Any], field: str, words: str
) -> None:
    r = hw.client.post("/api/v1/leaderboards/triple/hacks", headers=hw.auth(hw.bob), json={"case": case})
    assert r.status_code == 422, r.text
    error = error_of(r)
    assert (error["code"], error["field"]) == ("hack_refused", field) and words in error["message"]


def test_a_reference_breaking_hack_is_refused_with_its_field(hw: World) -> None:
    w, c = hw, hw.client

    def reference_fails(request: RunRequest) -> RunResult:
        if request.submission.name == "reference_as_submission.py":
            return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, message="values differ")
        return respond(request)

    posted = c.post("/api/v1/leaderboards/triple/hacks", headers=w.auth(w.bob), json={"case": dict(CASE, cols=7)})
    run_hacks(w, FakeLauncher(reference_fails))
    body = c.get(f"/api/v1/hacks/{posted.json()['hacks'][0]['hack_id']}", headers=w.auth(w.bob)).json()
    assert body["status"] == "refused" and "case: the reference fails on it" in body["note"]


def test_a_board_without_a_hack_space_and_an_anonymous_hacker_are_refused(hw: World) -> None:
    c = hw.client
    r = c.post("/api/v1/leaderboards/add/hacks", headers=hw.auth(hw.bob), json={"case": {"size": 3, "seed": 1}})
    assert r.status_code == 422 and "declares no hack_space" in error_of(r)["message"]
    assert c.post("/api/v1/leaderboards/triple/hacks", json={"case": CASE}).status_code == 401


def test_the_api_models_carry_the_views_fields() -> None:
    """Built with ``model_validate`` from the core's views: a field added to one must reach the other."""
    for model, view in ((HackOut, HackView), (HackEntryOut, HackEntry)):
        fields = {f.name for f in dataclasses.fields(view)} | ({"text"} if view is HackView else set())
        assert set(model.model_fields) == fields, model
