"""Mode compare through the API (issue 16): `POST /submissions` with `mode=compare` and a second file `against`, the
ratio per case and overall in `status.comparison`, "round k of N" on the event stream; on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from web_world import GOOD, World, error_of

from runners.contract import RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

FAST = b"def custom_kernel(data):  # fast\n    return data\n"


def by_file(request: RunRequest) -> RunResult:
    return accepted_result(request, 800.0 if b"# fast" in request.submission.content else 1000.0)


def compare(world: World, token: str, *, a: bytes = FAST, b: bytes = GOOD, **fields: object):
    data = {"leaderboard": "add", "devices": "cpu", "mode": "compare", "rounds": "2", **fields}
    data = {k: v for k, v in data.items() if v is not None}
    return world.client.post(
        "/api/v1/submissions",
        headers=world.auth(token),
        files={"file": ("fast.py", a), "against": ("plain.py", b)},
        data=data,
    )


def test_a_compare_is_submitted_followed_and_read(world: World) -> None:
    r = compare(world, world.ann)
    assert r.status_code == 202, r.text
    receipt = r.json()
    sid = receipt["submission_id"]
    assert receipt["mode"] == "compare" and [j["device"] for j in receipt["jobs"]] == ["cpu"]
    queued = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()
    assert queued["status"]["comparison"] == {
        "file_a": "fast.py",
        "file_b": "plain.py",
        "code_b_sha256": queued["status"]["comparison"]["code_b_sha256"],
        "device": "cpu",
        "rounds": 2,
        "result": None,
    }
    world.serve(FakeLauncher(by_file, remote_refs=False))

    body = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()
    status = body["status"]
    assert status["done"] and status["accepted"] and body["results"] == []
    result = status["comparison"]["result"]
    assert result["verdict"] == "accepted" and result["rounds"] == 2
    point = pytest.approx(0.8, rel=1e-12)  # no noise at all: the interval is a point
    assert result["ratio"] == point and result["ci_low"] == point and result["ci_high"] == point
    assert [c["ratio"] for c in result["cases"]] == [point] * len(result["cases"]) and result["cases"]
    assert result["cases"][0]["median_a_ns"] == 800.0 and result["cases"][0]["median_b_ns"] == 1000.0
    assert "fast.py is faster by 20.0%" in result["message"]

    with world.client.stream("GET", f"/api/v1/submissions/{sid}/events", headers=world.auth(world.ann)) as stream:
        text = "".join(stream.iter_text())
    blocks = [b for b in text.split("\n\n") if "event: progress" in b]
    progress = [json.loads(b.split("data: ", 1)[1]) for b in blocks]
    rounds = [p["detail"] for p in progress if p["phase"] == "round"]
    assert rounds == ["round 1 of 2 (fast.py first)", "round 2 of 2 (plain.py first)"]
    done = json.loads(text.split("event: done\ndata: ", 1)[1].split("\n", 1)[0])
    assert done["comparison"]["result"]["ratio"] == point  # the stream's last word carries the answer too
    mine = world.client.get("/api/v1/me/submissions", headers=world.auth(world.ann)).json()
    assert [(s["submission_id"], s["mode"]) for s in mine] == [(sid, "compare")]
    ranking = world.client.get("/api/v1/leaderboards/add/rankings", params={"device": "cpu"}).json()
    assert ranking["entries"] == []


def test_two_files_each_under_the_limit_fit_in_one_compare(world: World) -> None:
    limit = world.service.settings.max_submission_bytes
    big = FAST + b"#" * (limit * 7 // 10)  # 700 KiB each: together over one file's limit, each under it
    r = compare(world, world.ann, a=big, b=big + b"\n")
    assert r.status_code == 202, r.text
    r = compare(world, world.ann, a=big, b=b"#" * (limit + 1))  # one file over its limit, the body under two
    assert r.status_code == 413 and error_of(r)["code"] == "file_too_large"
    assert error_of(r)["message"].startswith("plain.py is 1,048,577 bytes; the limit is 1,048,576 bytes")
    r = compare(world, world.ann, a=big, b=b"#" * 2 * limit)  # the body over two files and the form
    assert r.status_code == 413 and error_of(r)["code"] == "file_too_large"
    assert "up to 1024 KiB each (two for a compare)" in error_of(r)["message"]


def test_the_same_file_twice_is_compared_not_deduplicated(world: World) -> None:
    world.service.settings.duplicate_window_s = 600
    first = compare(world, world.ann, a=GOOD, b=GOOD).json()["submission_id"]
    second = compare(world, world.ann, a=GOOD, b=GOOD).json()["submission_id"]
    assert first != second
    world.serve(FakeLauncher(by_file, remote_refs=False))
    for sid in (first, second):
        result = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()
        assert result["status"]["comparison"]["result"]["ratio"] == pytest.approx(1.0, rel=1e-12)


def test_compare_mistakes_answer_with_the_error_shape(world: World) -> None:
    cases = [
        (compare(world, world.ann, rounds="5"), 422, "bad_rounds", "rounds"),
        (compare(world, world.ann, devices="cpu,H100"), 422, "one_device", "devices"),
        (compare(world, world.ann, b=b""), 422, "empty_file", "against"),
        (world.submit(world.ann, mode="compare"), 422, "compare_needs_two_files", "mode"),
        (
            world.client.post(
                "/api/v1/submissions",
                headers=world.auth(world.ann),
                files={"file": ("a.py", GOOD), "against": ("b.py", GOOD)},
                data={"leaderboard": "add", "devices": "cpu", "mode": "test"},
            ),
            422,
            "against_without_compare",
            "against",
        ),
        (compare(world, "kc_nonsense"), 401, "invalid_token", None),
    ]
    for response, status, code, field in cases:
        assert response.status_code == status, response.text
        err = error_of(response)
        assert (err["code"], err["field"]) == (code, field), err


def test_a_compare_over_the_hourly_limit_is_a_429_that_counts_its_runs(world: World) -> None:
    world.service.settings.rate_limit_per_hour = 5
    assert compare(world, world.ann).status_code == 202  # 4 runs
    r = compare(world, world.ann)
    assert r.status_code == 429 and int(r.headers["retry-after"]) > 3000
    assert "a compare counts as 2 runs per round: this one 4, the last hour's 4" in error_of(r)["message"]
    too_big = compare(world, world.ann, rounds="6")
    assert too_big.status_code == 422 and error_of(too_big)["code"] == "too_many_rounds"


def test_both_files_of_a_compare_can_be_read_back(world: World) -> None:
    sid = compare(world, world.ann).json()["submission_id"]
    code = f"/api/v1/submissions/{sid}/code"
    a = world.client.get(code, headers=world.auth(world.ann)).json()
    b = world.client.get(code, params={"file": "b"}, headers=world.auth(world.ann)).json()
    assert (a["file_name"], a["code"].encode()) == ("fast.py", FAST)
    assert (b["file_name"], b["code"].encode()) == ("plain.py", GOOD)
    assert world.client.get(code, params={"file": "b"}, headers=world.auth(world.bob)).status_code == 404  # not his
    assert world.client.get(code, params={"file": "c"}, headers=world.auth(world.ann)).status_code == 422
    single = world.submit(world.ann).json()["submission_id"]
    r = world.client.get(f"/api/v1/submissions/{single}/code", params={"file": "b"}, headers=world.auth(world.ann))
    assert r.status_code in (400, 422) and "only a compare has a second" in error_of(r)["message"]
