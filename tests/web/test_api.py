"""The API as a competitor meets it: public reads, submitting, following, results, code, cancel and delete."""

from __future__ import annotations

import json

import pytest
from helpers import profiled
from web_world import GOOD, World, error_of

from runners.contract import Verdict
from runners.launchers.fake import FakeLauncher, verdict_result


def test_public_reads_need_no_token(world: World) -> None:
    c = world.client
    [board] = c.get("/api/v1/leaderboards").json()
    assert board["name"] == "add" and board["devices"] == ["cpu", "H100"] and board["is_open"]
    detail = c.get("/api/v1/leaderboards/add").json()
    assert detail["languages"] == ["pytorch"] and detail["tests"] == [{"size": 3, "seed": 1}]
    assert detail["dtype"] == "fp32"  # the task declares none: the fp32 peak bounds its flops
    assert detail["lang"] == "py" and detail["language"] == "Python (PyTorch, Triton, inline CUDA): .py files"
    assert len(detail["benchmarks"]) == 2 and detail["ranking_by"] == "geom"
    tpl = c.get("/api/v1/leaderboards/add/templates/pytorch").json()
    assert tpl["file_name"] == "add_pytorch.py" and "custom_kernel" in tpl["content"]  # NAME_LANG, as popcorn-cli's
    assert tpl["content"].startswith("#!POPCORN leaderboard add\n")  # a copy of it submits to its board
    ranking = c.get("/api/v1/leaderboards/add/rankings", params={"device": "h100"}).json()
    assert ranking["device"] == "H100" and ranking["entries"] == [] and ranking["total"] == 0
    history = c.get("/api/v1/leaderboards/add/history", params={"device": "cpu"}).json()
    assert history["best"] == [] and history["series"] == [] and history["total"] == 0


def test_not_found_and_bad_parameters_have_the_one_shape(world: World) -> None:
    c = world.client
    r = c.get("/api/v1/leaderboards/nope")
    assert r.status_code == 404 and error_of(r)["code"] == "leaderboard_not_found"
    assert "Known leaderboards: add" in error_of(r)["message"]
    r = c.get("/api/v1/leaderboards/add/rankings")
    assert r.status_code == 422 and error_of(r) == {
        "code": "device_not_allowed",
        "message": "Name a device of leaderboard 'add': give it as `devices` (on the command line, -d/--device NAME), "
        "one of: cpu, H100 (or 'all').",
        "field": "devices",
    }
    r = c.get("/api/v1/leaderboards/add/rankings", params={"device": "cpu", "limit": 5000})
    assert r.status_code == 422 and error_of(r)["field"] == "limit"
    r = c.get("/api/v1/leaderboards/add/rankings", params={"device": "cpu", "limit": "many"})
    assert r.status_code == 422 and error_of(r) == {
        "code": "invalid_field",
        "message": "limit must be a whole number from 1 to 100000.",
        "field": "limit",
    }
    r = c.get("/api/v1/leaderboards/add/templates/cobol")
    assert r.status_code == 404 and "offers: pytorch" in error_of(r)["message"]
    r = c.get("/api/v1/nowhere")
    assert r.status_code == 404 and error_of(r)["code"] == "not_found"
    r = c.get("/nowhere")  # outside the API: a page (docs/web.md)
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    r = c.put("/api/v1/leaderboards")
    assert r.status_code == 405 and error_of(r)["code"] == "method_not_allowed"


def test_submit_follow_and_read_the_results(world: World) -> None:
    r = world.submit(world.ann, devices="cpu,H100", mode="ranked")
    assert r.status_code == 202, r.text
    receipt = r.json()
    sid = receipt["submission_id"]
    assert [(j["device"], j["queue_position"]) for j in receipt["jobs"]] == [("cpu", 1), ("H100", 1)]
    assert receipt["links"]["self"] == f"http://testserver/api/v1/submissions/{sid}"
    assert r.headers["location"] == receipt["links"]["self"] and receipt["user_name"] == "ann"
    queued = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()
    assert [j["status"] for j in queued["status"]["jobs"]] == ["queued", "queued"] and not queued["status"]["done"]

    world.serve()
    done = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()
    status = done["status"]
    assert status["done"] and status["accepted"] and status["mode"] == "ranked"
    cpu = status["jobs"][0]
    assert cpu["verdict"] == "accepted" and cpu["secret_passed"] is True and cpu["rank"] == 1 and cpu["score_ns"]
    [public_cpu, public_h100] = done["results"]
    assert [t["verdict"] for t in public_cpu["result"]["tests"]] == ["accepted"]
    assert public_cpu["result"]["benchmarks"][0]["stats"]["median_ns"] == 1000.0
    assert public_cpu["result"]["roofline_share"] is None and public_h100["device"] == "H100"  # no bound on a CPU
    assert "code" not in done and done["code_sha256"]
    ranking = world.client.get("/api/v1/leaderboards/add/rankings", params={"device": "cpu"}).json()
    assert [(e["rank"], e["user_name"], e["submission_id"]) for e in ranking["entries"]] == [(1, "ann", sid)]
    history = world.client.get("/api/v1/leaderboards/add/history", params={"device": "cpu"}).json()
    assert [p["score_ns"] for p in history["best"]] == [ranking["entries"][0]["score_ns"]]
    assert [(s["user_name"], [p["submission_id"] for p in s["points"]]) for s in history["series"]] == [("ann", [sid])]
    code = world.client.get(f"/api/v1/submissions/{sid}/code", headers=world.auth(world.ann)).json()
    assert code["code"] == GOOD.decode() and code["public"] is False


def test_someone_elses_submission_is_a_404_like_a_missing_one(world: World) -> None:
    sid = world.submit(world.ann).json()["submission_id"]
    for path in ("", "/code", "/events"):
        theirs = world.client.get(f"/api/v1/submissions/{sid}{path}", headers=world.auth(world.bob))
        missing = world.client.get(f"/api/v1/submissions/999{path}", headers=world.auth(world.bob))
        assert theirs.status_code == missing.status_code == 404
        assert error_of(theirs)["code"] == error_of(missing)["code"] == "submission_not_found"
    anonymous = world.client.get(f"/api/v1/submissions/{sid}/code")
    assert anonymous.status_code == 404
    r = world.client.delete(f"/api/v1/submissions/{sid}", headers=world.auth(world.bob))
    assert r.status_code == 404
    admin = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.admin))
    assert admin.status_code == 200 and admin.json()["status"]["user_name"] == "ann"


def test_header_directives_and_flags(world: World) -> None:
    code = b"#!POPCORN leaderboard add\n#!POPCORN gpu H100\n#!kernelcup mode benchmark\n" + GOOD
    r = world.submit(world.ann, content=code, leaderboard=None, devices=None, mode=None)
    assert r.status_code == 202, r.text
    assert [j["device"] for j in r.json()["jobs"]] == ["H100"] and r.json()["mode"] == "benchmark"
    r = world.submit(world.ann, content=code, leaderboard=None, devices="all", mode=None)
    assert [j["device"] for j in r.json()["jobs"]] == ["cpu", "H100"]
    r = world.client.post(
        "/api/v1/submissions",
        headers=world.auth(world.ann),
        files={"file": ("k.py", GOOD)},
        data={"leaderboard": "add", "devices": ["cpu", "H100"], "mode": "test"},
    )
    assert [j["device"] for j in r.json()["jobs"]] == ["cpu", "H100"]


def test_the_same_file_again_answers_with_the_earlier_submission_unless_forced(world: World) -> None:
    """A newcomer's walk: the API had no `force` field and no `duplicate` in its answer, so the same file sent again
    came back as the old id with `queue_position: null`, nothing run, nothing said."""
    world.service.settings.duplicate_window_s = 600
    first = world.submit(world.ann).json()
    assert first["duplicate"] is False
    again = world.submit(world.ann).json()
    assert again["submission_id"] == first["submission_id"] and again["duplicate"] is True
    forced = world.submit(world.ann, force="true")
    assert forced.status_code == 202, forced.text
    assert forced.json()["submission_id"] != first["submission_id"] and forced.json()["duplicate"] is False
    assert [j["queue_position"] for j in forced.json()["jobs"]] == [2]


def test_cancel_while_queued_delete_when_finished(world: World) -> None:
    queued = world.submit(world.ann).json()["submission_id"]
    r = world.client.delete(f"/api/v1/submissions/{queued}", headers=world.auth(world.ann))
    assert r.json() == {"submission_id": queued, "action": "cancelled"}
    status = world.client.get(f"/api/v1/submissions/{queued}", headers=world.auth(world.ann)).json()["status"]
    assert [j["status"] for j in status["jobs"]] == ["cancelled"]
    ranked = world.submit(world.ann, mode="ranked").json()["submission_id"]
    world.serve()
    assert world.client.get("/api/v1/leaderboards/add/rankings?device=cpu").json()["total"] == 1
    # POST .../cancel only ever cancels: a finished submission stays ranked, and the answer says how to delete it.
    r = world.client.post(f"/api/v1/submissions/{ranked}/cancel", headers=world.auth(world.ann))
    assert r.status_code == 409 and error_of(r)["code"] == "already_finished", r.text
    assert "nothing to cancel" in error_of(r)["message"] and "delete it" in error_of(r)["message"]
    assert world.client.get("/api/v1/leaderboards/add/rankings?device=cpu").json()["total"] == 1
    queued = world.submit(world.ann).json()["submission_id"]
    r = world.client.post(f"/api/v1/submissions/{queued}/cancel", headers=world.auth(world.ann))
    assert r.json() == {"submission_id": queued, "action": "cancelled"}
    r = world.client.delete(f"/api/v1/submissions/{ranked}", headers=world.auth(world.ann))
    assert r.json() == {"submission_id": ranked, "action": "deleted"}
    assert world.client.get("/api/v1/leaderboards/add/rankings?device=cpu").json()["total"] == 0
    assert world.client.get(f"/api/v1/submissions/{ranked}", headers=world.auth(world.ann)).status_code == 404


def test_my_submissions_and_a_failed_run(world: World) -> None:
    sid = world.submit(world.ann).json()["submission_id"]
    world.serve(FakeLauncher(verdict_result(Verdict.WRONG_ANSWER, "mismatch at [3]")))
    mine = world.client.get("/api/v1/me/submissions", headers=world.auth(world.ann)).json()
    assert [(s["submission_id"], s["jobs"][0]["verdict"]) for s in mine] == [(sid, "wrong_answer")]
    assert not mine[0]["jobs"][0]["accepted"] and mine[0]["jobs"][0]["finished"]
    assert world.client.get("/api/v1/me/submissions", headers=world.auth(world.bob)).json() == []
    body = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()
    assert body["results"][0]["result"]["message"] == "mismatch at [3]"


def test_events_of_a_finished_submission(world: World) -> None:
    sid = world.submit(world.ann).json()["submission_id"]
    world.serve()
    with world.client.stream("GET", f"/api/v1/submissions/{sid}/events", headers=world.auth(world.ann)) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    events = [block for block in text.split("\n\n") if block.startswith(("id:", "event:"))]
    phases = [json.loads(b.split("data: ", 1)[1])["phase"] for b in events if "event: progress" in b]
    assert phases == ["queued", "started", "testing", "done"]
    assert events[0].startswith("id: ") and "event: done" in events[-1]
    final = json.loads(events[-1].split("data: ", 1)[1])
    assert final["done"] and final["accepted"]
    last_id = events[1].split("\n")[0].removeprefix("id: ")
    with world.client.stream(
        "GET", f"/api/v1/submissions/{sid}/events", headers={**world.auth(world.ann), "Last-Event-ID": last_id}
    ) as r:
        resumed = "".join(r.iter_text())
    assert [json.loads(b.split("data: ", 1)[1])["phase"] for b in resumed.split("\n\n") if "progress" in b] == [
        "testing",
        "done",
    ]


def test_a_fresh_ranking_is_served_from_the_cache_then_refreshed(world: World) -> None:
    cache = world.client.app.state.rankings_cache  # type: ignore[attr-defined]
    cache.ttl_s = 3600.0
    url = "/api/v1/leaderboards/add/rankings?device=cpu"
    assert world.client.get(url).json()["total"] == 0
    world.submit(world.ann, mode="ranked")
    world.serve()
    first = world.client.get(url).json()
    assert first["total"] == 1
    world.submit(world.bob, mode="ranked")
    world.serve(clear_cache=False)
    assert world.client.get(url).json() == first  # still fresh: answered from memory, before routing
    assert world.service.ranking("add", "cpu").total == 2
    cache.ttl_s = 0.0
    assert world.client.get(url).json()["total"] == 2
    metrics = world.client.get("/metrics").text
    assert 'route="/api/v1/leaderboards/{name}/rankings",status="200"} 4.0' in metrics


def test_a_profile_run_has_its_kernel_metrics_in_json_and_its_report_at_a_download_url(world: World) -> None:
    sid = world.submit(world.ann, mode="profile").json()["submission_id"]
    world.serve(FakeLauncher(profiled))
    body = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()
    (public,) = body["results"]
    kernels = public["result"]["kernel_metrics"]
    assert len(kernels) == 3 and kernels[0]["name"] == "add_kernel" and kernels[0]["duration_ns"] == 5184.0
    assert kernels[1]["top_stalls"][0] == {
        "reason": "math_pipe_throttle", "value": 2.4,
        "metric": "smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio",
    }  # fmt: skip
    assert public["result"]["ncu_report"] is None  # not in the JSON: its own route
    url = f"http://testserver/api/v1/submissions/{sid}/profile/cpu.ncu-rep"
    assert public["ncu_report_url"] == url and public["ncu_report_bytes"] == 18
    got = world.client.get(url, headers=world.auth(world.ann))
    assert got.status_code == 200 and got.content == b"NVRP\x00 report bytes"
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["content-disposition"] == f'attachment; filename="submission-{sid}-cpu.ncu-rep"'
    assert world.client.get(url, headers=world.auth(world.bob)).status_code == 404  # someone else's: like missing
    assert world.client.get(url).status_code == 401
    status = body["status"]["jobs"][0]
    assert status["score_ns"] is None and status["rank"] is None  # a profile run never enters a ranking
    ranking = world.client.get("/api/v1/leaderboards/add/rankings", params={"device": "cpu"}).json()
    assert ranking["entries"] == []


def test_a_run_without_a_report_says_so_on_its_download_url(world: World) -> None:
    sid = world.submit(world.ann, mode="profile").json()["submission_id"]
    world.serve()
    body = world.client.get(f"/api/v1/submissions/{sid}", headers=world.auth(world.ann)).json()
    assert body["results"][0]["ncu_report_url"] is None
    missing = world.client.get(f"/api/v1/submissions/{sid}/profile/cpu.ncu-rep", headers=world.auth(world.ann))
    assert missing.status_code == 404
    assert error_of(missing)["message"].startswith(f"Submission #{sid} has no Nsight Compute report for 'cpu'")


def test_a_hidden_leaderboard_is_unknown_in_my_submissions_but_to_admins(world: World) -> None:
    c = world.client
    c.patch("/api/v1/admin/leaderboards/add", headers=world.auth(world.admin), json={"visible": False})
    for name in ("add", "nosuch"):  # the same answer: a hidden board's existence is not told
        r = c.get("/api/v1/me/submissions", params={"leaderboard": name}, headers=world.auth(world.ann))
        assert r.status_code == 404 and error_of(r)["code"] == "leaderboard_not_found", r.text
    r = c.get("/api/v1/me/submissions", params={"leaderboard": "add"}, headers=world.auth(world.admin))
    assert r.status_code == 200 and r.json() == []


def test_ids_past_the_database_range_are_refused_without_a_traceback(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    c, ann, admin = world.client, world.auth(world.ann), world.auth(world.admin)
    sid = world.submit(world.ann).json()["submission_id"]
    huge = str(2**64)
    asked = [
        (c.get, f"/api/v1/submissions/{huge}/code", {}),  # unauthenticated
        (c.get, f"/api/v1/submissions/{huge}", ann),
        (c.get, f"/api/v1/submissions/{huge}/events", ann),
        (c.get, f"/api/v1/submissions/{huge}/profile/cpu.ncu-rep", ann),
        (c.post, f"/api/v1/submissions/{huge}/cancel", ann),
        (c.delete, f"/api/v1/submissions/{huge}", ann),
        (c.delete, f"/api/v1/me/tokens/{huge}", ann),
        (c.delete, f"/api/v1/admin/submissions/{huge}", admin),
        (c.delete, f"/api/v1/admin/tokens/{huge}", admin),
        (c.get, f"/api/v1/submissions/{sid}/events?after={huge}", ann),
    ]
    for call, url, headers in asked:
        r = call(url, headers=headers)
        assert r.status_code == 422 and error_of(r)["code"] == "invalid_field", (url, r.text)
    r = c.get(f"/api/v1/submissions/{sid}/events", headers={**ann, "Last-Event-ID": huge})
    assert r.status_code == 422 and error_of(r)["field"] == "Last-Event-ID", r.text
    assert "send the id of the last event received" in error_of(r)["message"]
    for url in (f"/submissions/{huge}", f"/submissions/{huge}/events", f"/submissions/{huge}/profile/cpu.ncu-rep"):
        assert c.get(url).status_code in (404, 422), url  # the pages: an error page, not a 500
    assert not [rec for rec in caplog.records if rec.levelname == "ERROR"]


def test_event_streams_are_capped_per_account_and_in_all(world: World) -> None:
    c, ann = world.client, world.auth(world.ann)
    sid = world.submit(world.ann).json()["submission_id"]
    world.serve()
    slots = c.app.state.stream_slots  # type: ignore[attr-defined]
    slots.per_user, slots.total = 2, 3
    held = [slots.take("local:ann"), slots.take("local:ann")]  # two streams of ann's still open
    r = c.get(f"/api/v1/submissions/{sid}/events", headers=ann)
    assert r.status_code == 429 and error_of(r)["code"] == "too_many_streams" and r.headers["Retry-After"]
    assert "You have 2 event streams open" in error_of(r)["message"]
    assert "KERNELCUP_API_SSE_MAX_PER_USER=2" in error_of(r)["message"]
    held[0]()
    held[0]()  # given back once, however often called
    held += [slots.take("local:bob"), slots.take("local:bob")]
    r = c.get(f"/api/v1/submissions/{sid}/events", headers=ann)
    assert r.status_code == 429 and "The server has 3 event streams open" in error_of(r)["message"]
    assert "KERNELCUP_API_SSE_MAX_STREAMS=3" in error_of(r)["message"]
    held[2](), held[3]()
    with c.stream("GET", f"/api/v1/submissions/{sid}/events", headers=ann) as r:
        assert r.status_code == 200 and "event: done" in "".join(r.iter_text())
    assert slots.open == {"local:ann": 1}  # the finished stream gave its slot back
