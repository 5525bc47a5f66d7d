"""GPU budgets that cannot be escaped over the API (the red team's findings, ``leaderboards/budgets.py``): a token with
its own budget mints no fresh, unbudgeted token; an input hack is refused while a budget it would spend is used up,
and its runs' evaluation seconds are spent from the account's and the token's budgets; a token made with another
token revokes only itself and the tokens made with it, never the person's own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from web_world import HACK_FIXTURE, World, error_of, run_hacks, with_hack_board

from runners.contract import Mode, RunRequest, RunResult, TestResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result

FIXTURE = HACK_FIXTURE
HONEST = (FIXTURE / "honest.py").read_bytes()
CASE = {"rows": 3, "cols": 33, "seed": 5}


def token_id(w: World, token: str) -> int:
    return int(w.client.get("/api/v1/me", headers=w.auth(token)).json()["token_id"])


def set_token_budget(w: World, token: str, seconds: float) -> None:
    put = w.client.put(
        f"/api/v1/admin/budgets/tokens/{token_id(w, token)}", headers=w.auth(w.admin), json={"seconds": seconds}
    )
    assert put.status_code == 200, put.text


def mint(w: World, token: str, name: str = "fresh"):  # type: ignore[no-untyped-def]
    return w.client.post("/api/v1/me/tokens", headers=w.auth(token), json={"name": name})


def test_a_token_with_its_own_budget_mints_no_unbudgeted_token(world: World) -> None:
    w = world
    set_token_budget(w, w.ann, 0)
    assert w.submit(w.ann).status_code == 429
    refused = mint(w, w.ann)
    assert refused.status_code == 403, refused.text
    err = error_of(refused)
    assert err["code"] == "budgeted_token"
    assert "GPU budget" in err["message"] and "web page" in err["message"] and "admin" in err["message"]
    assert len(w.client.get("/api/v1/me/tokens", headers=w.auth(w.ann)).json()) == 1  # nothing was made
    made = mint(w, w.bob)  # a token without a budget still makes tokens
    assert made.status_code == 201, made.text


def timed(request: RunRequest) -> RunResult:
    """Every run took the runner 2 s: a ranked run accepted, a hack's test run accepted on its case."""
    now = datetime.now(UTC)
    times = {"started_at": now - timedelta(seconds=2), "finished_at": now}
    if request.mode is not Mode.TEST:
        return accepted_result(request).model_copy(update=times)
    (case,) = request.tests
    tests = [TestResult(index=0, case=case, verdict=Verdict.ACCEPTED)]
    return RunResult(verdict=Verdict.ACCEPTED, mode=request.mode, tests=tests, **times)


@pytest.fixture
def hw(world: World) -> World:
    return with_hack_board(world)


def hack(w: World, token: str, case: dict | None = None):  # type: ignore[no-untyped-def,type-arg]
    return w.client.post("/api/v1/leaderboards/triple/hacks", headers=w.auth(token), json={"case": case or CASE})


def test_a_hack_is_refused_while_a_budget_it_would_spend_is_used_up(hw: World) -> None:
    w = hw
    put = w.client.put("/api/v1/admin/budgets/accounts/bob", headers=w.auth(w.admin), json={"seconds": 0})
    assert put.status_code == 200, put.text
    refused = hack(w, w.bob)
    assert refused.status_code == 429, refused.text
    assert error_of(refused)["code"] == "gpu_budget_exhausted"
    assert "Your account's" in error_of(refused)["message"]
    set_token_budget(w, w.ann, 0)  # the sending token's budget binds a hack too
    refused = hack(w, w.ann)
    assert refused.status_code == 429 and "This token's" in error_of(refused)["message"]


def test_a_hacks_runs_are_spent_from_the_account_and_the_token(hw: World) -> None:
    w = hw
    launcher = FakeLauncher(timed)
    w.submit(w.admin, leaderboard="triple", mode="ranked", content=HONEST)
    w.serve(launcher)
    set_token_budget(w, w.bob, 3)
    put = w.client.put("/api/v1/admin/budgets/accounts/bob", headers=w.auth(w.admin), json={"seconds": 100})
    assert put.status_code == 200, put.text
    assert hack(w, w.bob).status_code == 202
    run_hacks(w, launcher)  # the reference's run and one entry's: 4 s
    budgets = {b["subject"]: b for b in w.client.get("/api/v1/me/budgets", headers=w.auth(w.bob)).json()}
    assert budgets["token"]["spent_s"] >= 4 and budgets["token"]["left_s"] == 0
    assert budgets["account"]["spent_s"] >= 4
    over = hack(w, w.bob, {**CASE, "seed": 6})
    assert over.status_code == 429 and error_of(over)["code"] == "gpu_budget_exhausted"
    assert w.submit(w.bob, leaderboard="triple").status_code == 429  # and so is a submission


def test_a_token_made_with_a_token_revokes_only_itself_and_what_it_made(world: World) -> None:
    w = world
    program = mint(w, w.ann, "program").json()["token"]
    helper = mint(w, program, "program's helper").json()["token"]
    person_id, program_id, helper_id = token_id(w, w.ann), token_id(w, program), token_id(w, helper)
    refused = w.client.delete(f"/api/v1/me/tokens/{person_id}", headers=w.auth(program))
    assert refused.status_code == 403, refused.text
    assert error_of(refused)["code"] == "token_not_revocable" and "ask an admin" in error_of(refused)["message"]
    sibling = mint(w, w.ann, "another program").json()["token"]
    refused = w.client.delete(f"/api/v1/me/tokens/{token_id(w, sibling)}", headers=w.auth(program))
    assert refused.status_code == 403
    assert w.client.delete(f"/api/v1/me/tokens/{program_id}", headers=w.auth(helper)).status_code == 403
    assert w.client.get("/api/v1/me", headers=w.auth(w.ann)).status_code == 200  # the person's token lives
    assert w.client.delete(f"/api/v1/me/tokens/{helper_id}", headers=w.auth(program)).status_code == 200
    assert w.client.delete(f"/api/v1/me/tokens/{program_id}", headers=w.auth(program)).status_code == 200  # itself
    assert w.client.delete(f"/api/v1/me/tokens/{token_id(w, sibling)}", headers=w.auth(w.ann)).status_code == 200


def test_a_token_with_its_own_budget_revokes_only_itself(world: World) -> None:
    w = world
    other = w.service.create_token(w.service.authenticate(w.ann).user, name="laptop").info.token_id
    set_token_budget(w, w.ann, 100)
    refused = w.client.delete(f"/api/v1/me/tokens/{other}", headers=w.auth(w.ann))
    assert refused.status_code == 403 and error_of(refused)["code"] == "token_not_revocable"
    mine = token_id(w, w.ann)
    assert w.client.delete(f"/api/v1/me/tokens/{mine}", headers=w.auth(w.ann)).status_code == 200
