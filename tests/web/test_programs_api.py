"""Programs through the HTTP API (issue 33): batches (answered at once, followed by GET and an event stream), the
Idempotency-Key of the submitting routes, GPU budgets (admins set them, a used-up one is a 429 saying what is left
and when it refills) and reward records that validate against docs/schemas/reward.schema.json."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jsonschema
from sqlalchemy import func, select
from web_world import GOOD, World, error_of

from leaderboards.models import Submission
from runners.contract import RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / "reward.schema.json").read_text())


def two_seconds(request: RunRequest) -> RunResult:
    """An accepted run that took the runner 2 s."""
    now = datetime.now(UTC)
    return accepted_result(request).model_copy(update={"started_at": now - timedelta(seconds=2), "finished_at": now})


def submissions(world: World) -> int:
    with world.service.db.transaction() as s:
        return int(s.scalar(select(func.count()).select_from(Submission)) or 0)


def send_batch(world: World, token: str, files: list[tuple[str, bytes]], headers: dict[str, str] | None = None,
               **fields: object):  # type: ignore[no-untyped-def]  # fmt: skip
    data = {"leaderboard": "add", "device": "cpu", "mode": "benchmark", **fields}
    return world.client.post(
        "/api/v1/batches",
        headers={**world.auth(token), **(headers or {})},
        files=[("files", f) for f in files],
        data=data,
    )


def test_a_batch_is_answered_at_once_and_followed_to_its_rewards(world: World) -> None:
    files = [("a.py", GOOD), ("b.cu", b"__global__ void k() {}\n"), ("c.py", GOOD + b"# another\n")]
    answer = send_batch(world, world.ann, files)
    assert answer.status_code == 202, answer.text
    batch = answer.json()
    assert answer.headers["Location"] == batch["links"]["self"]
    assert [i["status"] for i in batch["items"]] == ["queued", "refused", "queued"]
    assert batch["items"][1]["error_code"] == "wrong_file_type" and batch["finished"] == 1 and not batch["done"]

    world.serve()
    path = f"/api/v1/batches/{batch['batch_id']}"
    done = world.client.get(path, headers=world.auth(world.ann)).json()
    assert done["done"] and done["finished"] == 3
    for item in done["items"]:
        jsonschema.validate(item["reward"], SCHEMA)
    assert done["items"][0]["reward"]["verdict"] == "accepted" and done["items"][0]["reward"]["correct_fraction"] == 1

    with world.client.stream("GET", f"{path}/events", headers=world.auth(world.ann)) as stream:
        text = "".join(stream.iter_text())
    events = [block for block in text.split("\n\n") if block.startswith("id:") or block.startswith("event:")]
    candidates = [e for e in events if "event: candidate" in e]
    assert len(candidates) == 3 and "event: done" in events[-1]
    assert {json.loads(e.split("data: ", 1)[1])["position"] for e in candidates} == {0, 1, 2}

    assert world.client.get(path, headers=world.auth(world.bob)).status_code == 404
    sub = done["items"][0]["submission_id"]
    rewards = world.client.get(f"/api/v1/submissions/{sub}/reward", headers=world.auth(world.ann)).json()
    assert rewards["done"] and rewards["rewards"][0]["device"] == "cpu"
    jsonschema.validate(rewards["rewards"][0]["reward"], SCHEMA)


def test_a_batch_refused_as_a_whole_stores_nothing(world: World) -> None:
    answer = send_batch(world, world.ann, [("a.py", GOOD)], device="B200")
    assert answer.status_code == 422 and submissions(world) == 0
    many = [(f"{i}.py", GOOD + f"# {i}\n".encode()) for i in range(65)]
    answer = send_batch(world, world.ann, many)
    assert answer.status_code == 422 and error_of(answer)["code"] == "batch_too_large"
    assert "at most 64" in error_of(answer)["message"] and submissions(world) == 0


def test_a_batch_may_carry_more_than_a_plain_body_but_each_file_keeps_its_limit(world: World) -> None:
    """Red team, 2026-11-28: the batch route was held to the 1 MiB of a plain request body in all."""
    big = [(f"{i}.py", GOOD + b"#" * 700_000 + f" {i}\n".encode()) for i in range(3)]  # 2.1 MB in all
    answer = send_batch(world, world.ann, big)
    assert answer.status_code == 202, answer.text
    assert [i["status"] for i in answer.json()["items"]] == ["queued"] * 3
    too_big = [("x.py", GOOD + b"#" * (1024 * 1024))]
    answer = send_batch(world, world.ann, too_big)
    assert answer.status_code == 413 and "the limit is 1,048,576 bytes" in error_of(answer)["message"]


def test_an_idempotency_key_answers_a_retry_with_the_first_answer(world: World) -> None:
    key = {"Idempotency-Key": "7f1c6a52-retry"}
    first = world.client.post(
        "/api/v1/submissions", headers={**world.auth(world.ann), **key}, files={"file": ("k.py", GOOD)},
        data={"leaderboard": "add", "devices": "cpu", "mode": "test"},
    )  # fmt: skip
    again = world.client.post(
        "/api/v1/submissions", headers={**world.auth(world.ann), **key}, files={"file": ("k.py", GOOD)},
        data={"leaderboard": "add", "devices": "cpu", "mode": "test"},
    )  # fmt: skip
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Location"] == first.headers["Location"] and submissions(world) == 1
    other = world.client.post(
        "/api/v1/submissions", headers={**world.auth(world.ann), **key}, files={"file": ("k.py", GOOD + b"#\n")},
        data={"leaderboard": "add", "devices": "cpu", "mode": "test"},
    )  # fmt: skip
    assert other.status_code == 409 and error_of(other)["code"] == "idempotency_key_reused"
    assert "7f1c6a52-retry" in error_of(other)["message"] and submissions(world) == 1
    # another account's key of the same name is its own
    assert world.submit(world.bob).status_code == 202
    bob = world.client.post(
        "/api/v1/submissions", headers={**world.auth(world.bob), **key}, files={"file": ("k.py", GOOD)},
        data={"leaderboard": "add", "devices": "cpu", "mode": "test"},
    )  # fmt: skip
    assert bob.status_code == 202 and "Idempotent-Replayed" not in bob.headers
    # a refused first request keeps nothing: its retry runs
    bad = {"Idempotency-Key": "bad-first"}
    assert send_batch(world, world.ann, [("a.py", GOOD)], bad, device="B200").status_code == 422
    batch = send_batch(world, world.ann, [("a.py", GOOD)], bad)
    replay = send_batch(world, world.ann, [("a.py", GOOD)], bad)
    assert batch.status_code == replay.status_code == 202 and replay.json()["batch_id"] == batch.json()["batch_id"]


def test_a_used_up_gpu_budget_is_a_429_with_what_is_left_and_when_it_refills(world: World) -> None:
    me = world.client.get("/api/v1/me", headers=world.auth(world.ann)).json()
    refused = world.client.put("/api/v1/admin/budgets/accounts/ann", headers=world.auth(world.ann), json={"seconds": 1})
    assert refused.status_code == 403
    put = world.client.put(
        f"/api/v1/admin/budgets/tokens/{me['token_id']}", headers=world.auth(world.admin), json={"seconds": 3}
    )
    assert put.status_code == 200, put.text
    assert put.json()["subject"] == "token" and put.json()["left_s"] == 3 and put.json()["period_s"] == 86400
    assert world.submit(world.ann).status_code == 202
    world.serve(FakeLauncher(respond=two_seconds))
    assert world.submit(world.ann).status_code == 202  # 2 of 3 s spent: still room
    world.serve(FakeLauncher(respond=two_seconds))
    over = world.submit(world.ann)
    assert over.status_code == 429 and error_of(over)["code"] == "gpu_budget_exhausted"
    assert "0 s left" in error_of(over)["message"] and "refills at" in error_of(over)["message"]
    assert int(over.headers["Retry-After"]) > 0
    (mine,) = world.client.get("/api/v1/me/budgets", headers=world.auth(world.ann)).json()
    assert mine["spent_s"] >= 4 and mine["left_s"] == 0
    listed = world.client.get("/api/v1/admin/budgets", headers=world.auth(world.admin)).json()
    assert [b["token_id"] for b in listed] == [me["token_id"]]
    gone = world.client.delete(f"/api/v1/admin/budgets/tokens/{me['token_id']}", headers=world.auth(world.admin))
    assert gone.status_code == 200 and world.submit(world.ann).status_code == 202


def test_a_replay_is_the_owners_for_a_benchmark_and_an_admins_for_a_ranked_run(world: World) -> None:
    sub = world.submit(world.ann, mode="benchmark").json()["submission_id"]
    world.serve()
    replay = world.client.post(f"/api/v1/submissions/{sub}/replay", headers=world.auth(world.ann))
    assert replay.status_code == 202, replay.text
    replay_id = replay.json()["submission_id"]
    assert replay.headers["Location"].endswith(f"/submissions/{replay_id}")
    assert world.client.post(f"/api/v1/submissions/{sub}/replay", headers=world.auth(world.bob)).status_code == 404
    world.serve()
    report = world.client.get(f"/api/v1/submissions/{replay_id}/replay", headers=world.auth(world.ann)).json()
    assert report["replay_of"] == sub and report["done"] and report["holds"]
    assert report["devices"][0]["same_verdict"] and report["devices"][0]["cases"][0]["within"]

    ranked = world.submit(world.ann, mode="ranked").json()["submission_id"]
    world.serve()
    refused = world.client.post(f"/api/v1/submissions/{ranked}/replay", headers=world.auth(world.ann))
    assert refused.status_code == 403 and error_of(refused)["code"] == "replay_not_allowed"
    key = {**world.auth(world.admin), "Idempotency-Key": "replay-1"}
    first = world.client.post(f"/api/v1/submissions/{ranked}/replay", headers=key)
    again = world.client.post(f"/api/v1/submissions/{ranked}/replay", headers=key)
    assert first.status_code == again.status_code == 202 and first.json() == again.json()
    world.serve()
    ranking = world.client.get("/api/v1/leaderboards/add/rankings", params={"device": "cpu"}).json()
    assert [e["submission_id"] for e in ranking["entries"]] == [ranked]
