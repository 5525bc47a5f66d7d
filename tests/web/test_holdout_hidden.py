"""No surface shows a held-out case (issue 29): a walk over every API route and every page, as nobody, a competitor
and an admin, after ranked and test runs, finds none of the held-out shapes; nor does the task view the bot's and the
CLI's ``task`` render, nor the request of any of the competitor's own runs."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import zipfile
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import yaml
from helpers import future, write_problem
from sqlalchemy import select
from starlette.routing import Route
from web_world import World

from bot.reports import task_reply
from leaderboards.holdout import SystemTestRunner
from leaderboards.models import Leaderboard
from leaderboards.problems import load_problem
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.fake import FakeLauncher, accepted_result

SHAPES = ("918273", "645127")  # the held-out sizes: no other number of the world has these digits
HELD_OUT = [{"size": int(SHAPES[0]), "seed": 4242}, {"size": int(SHAPES[1]), "seed": 4343}]


@pytest.fixture
def held_world(world: World) -> World:
    """The API world with a second leaderboard, ``held``, whose problem has held-out cases."""
    path = write_problem(world.problems, "held")
    task = yaml.safe_load((path / "task.yml").read_text())
    task["holdout"] = HELD_OUT
    task["hack_space"] = {  # input hacks (issue 35): a hack's case is a held-out case once it breaks an entry
        "params": {"size": {"type": "int", "min": 1, "max": 10**6}, "seed": {"type": "int", "min": 0, "max": 10**4}},
        "sizes": ["size"],
        "max_size": 10**6,
    }
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    world.service.create_leaderboard(load_problem(path), deadline=future(), devices=["cpu", "H100"])
    return world


def fill(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: ids.get(m.group(1), "1"), path)


def _routes(routes: list) -> Iterator[Route]:
    """Every route of the app, through the routers it included (FastAPI keeps those as one entry each)."""
    for route in routes:
        if isinstance(route, Route):
            yield route
        inner = getattr(route, "original_router", None) or getattr(route, "router", None)
        if inner is not None and hasattr(inner, "routes"):
            yield from _routes(inner.routes)


def assert_hidden(text: str, where: object) -> None:
    for shape in SHAPES:
        assert shape not in text, where


def test_no_route_or_page_shows_a_held_out_case(held_world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    w, c = held_world, held_world.client
    policy = c.put("/api/v1/admin/leaderboards/held/archive-policy", headers=w.auth(w.admin), json={"at_once": True})
    assert policy.status_code == 200, policy.text  # the archive (issue 34) publishes ann's licensed entry at once
    sid = w.submit(w.ann, mode="ranked", leaderboard="held", license="MIT").json()["submission_id"]
    w.submit(w.bob, mode="benchmark", leaderboard="held")
    w.serve()
    system_tests(w)  # their results are walked too
    input_hack(w)  # hack #1, ann's, breaks root's entry with a held-out case: the hack routes are walked too
    assert [e["submission_id"] for e in c.get("/api/v1/archive").json()["entries"]] == [sid]  # walked below
    ids = {"name": "held", "language": "pytorch", "device": "cpu", "submission_id": str(sid), "user": "local:ann",
           "token_id": "1", "hack_id": "1"}  # fmt: skip
    assert c.get("/api/v1/hacks/1", headers=w.auth(w.ann)).json()["broken"] == 1  # walked below, as its author
    walked = 0
    api = c.get("/api/openapi.json").json()["paths"]
    pages = [r.path for r in _routes(c.app.routes) if "GET" in (r.methods or ()) and r.path not in api]
    assert {"/leaderboards/{name}", "/", "/me", "/submissions/{submission_id}"} <= {*api, *pages}  # pages too
    for path, methods in [*((p, {m.upper() for m in ops}) for p, ops in api.items()), *((p, {"GET"}) for p in pages)]:
        if "events" in path:
            continue  # event streams: the run's events are checked through the submission's own routes below
        for method in sorted(methods & {"GET", "POST", "PATCH", "PUT"}):
            for token in (None, w.ann, w.admin):
                headers = w.auth(token) if token else {}
                url = fill(path, ids)
                r = c.request(method, url, headers=headers, json={}, params={"device": "cpu", "confirm": "no"})
                assert_hidden(r.text, (method, url, r.status_code))
                walked += 1
    assert walked > 60
    shown = c.get("/api/v1/leaderboards/held").json()  # the walk reads where cases are shown: the public ones are
    assert shown["benchmarks"] == [{"size": 100, "seed": 2}, {"size": 1000, "seed": 3}] and "holdout" not in shown
    # What the bot's and the CLI's `task` render, and every run the competitors' jobs were sent.
    view = w.service.task("held")
    assert_hidden(repr(view), "task view")
    reply = task_reply(view)  # the bot's /leaderboard task, its files included
    shown = reply.content + json.dumps([e.to_dict() for e in reply.embeds]) + "".join(repr(f.data) for f in reply.files)
    assert "Add two vectors." in shown and reply.files
    assert_hidden(shown, "/leaderboard task")
    assert caplog.records  # the worker and the app logged while all this ran, and no line names a held-out shape
    assert_hidden("\n".join(r.getMessage() for r in caplog.records) + caplog.text, "log lines")
    for planned in (p for job in range(1, 5) for p in _plans(w, job)):
        assert_hidden(planned.request.model_dump_json(), planned.job_id)


def input_hack(w: World) -> None:
    """Root ranks an entry; ann's input hack (its case one of the held-out ones) breaks it, through the API and a
    hack runner."""
    from leaderboards.board_hacks import HackRunner
    from runners.contract import Mode, RunResult, Verdict

    broken = b"def custom_kernel(data):\n    return data  # root's\n"
    w.submit(w.admin, mode="ranked", leaderboard="held", content=broken, devices="cpu")
    w.serve()
    hacked = w.client.post("/api/v1/leaderboards/held/hacks", headers=w.auth(w.ann), json={"case": HELD_OUT[0]})
    assert hacked.status_code == 202, hacked.text
    launcher = FakeLauncher(
        lambda r: (
            RunResult(verdict=Verdict.WRONG_ANSWER, mode=r.mode, message="values differ")
            if r.mode is Mode.TEST and r.submission.content == broken
            else accepted_result(r)
        )
    )
    runner = HackRunner(w.service, lambda _d: launcher, 10.0)

    async def db(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    while asyncio.run(runner.run_one("w1", (), db)):
        pass
    assert w.service.hack(1, None, admin=True).broken == 1
    w.client.app.state.rankings_cache.clear()  # type: ignore[attr-defined]
    w.client.app.state.pages_cache.clear()  # type: ignore[attr-defined]


def system_tests(w: World) -> FakeLauncher:
    """Queue the held leaderboard's system tests through the admin API and run them with a worker."""
    queued = w.client.post("/api/v1/admin/leaderboards/held/system-tests", headers=w.auth(w.admin), json={"top": 5})
    assert queued.status_code == 200, queued.text
    launcher = FakeLauncher()
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    runner = SystemTestRunner(w.service, lambda _d: launcher, 10.0)
    asyncio.run(Worker(w.service, lambda _d: launcher, settings, system_tests=runner).run(once=True))
    w.client.app.state.rankings_cache.clear()  # type: ignore[attr-defined]
    assert [r.tests for r in launcher.requests] == [HELD_OUT]
    return launcher


def test_standings_show_held_out_coverage_only(held_world: World) -> None:
    w, c = held_world, held_world.client
    refused = c.post("/api/v1/admin/leaderboards/held/system-tests", headers=w.auth(w.ann), json={})
    assert refused.status_code == 403
    w.submit(w.ann, mode="ranked", leaderboard="held")
    w.serve()
    system_tests(w)
    live = c.get("/api/v1/leaderboards/held/standings", params={"device": "cpu"})
    assert live.status_code == 200, live.text
    body = live.json()
    assert (body["final"], [(r["rank"], r["coverage"]) for r in body["rows"]]) == (
        False,
        [(1, "2 of 2 held-out cases")],
    )
    final = c.get("/api/v1/leaderboards/held/standings", params={"device": "cpu", "final": "true"})
    assert final.status_code == 404 and "no final standings on cpu yet" in final.json()["error"]["message"]
    assert_hidden(live.text + final.text, "standings")


def _plans(w: World, job: int) -> tuple:
    try:
        return w.service.run_requests(job)
    except Exception:  # a job id that does not exist (fewer jobs than the loop's range)
        return ()


def test_the_public_problem_folder_holds_no_held_out_case_nor_secret_seed(held_world: World) -> None:
    """``GET …/problem`` (what `kernelcup problems get` and the page's download fetch) is the folder less what only the
    server knows: its task.yml has the public cases and no holdout, no file holds a held-out shape or the board's
    secret seed, its templates open with the line that sends a copy to the board; a hidden board is unknown."""
    w, c = held_world, held_world.client
    with w.service.db.transaction() as s:
        seed = str(s.scalar(select(Leaderboard.secret_seed).where(Leaderboard.name == "held")))
    answer = c.get("/api/v1/leaderboards/held/problem")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    task = yaml.safe_load(body["files"]["task.yml"])
    assert task["benchmarks"] == [{"size": 100, "seed": 2}, {"size": 1000, "seed": 3}] and "holdout" not in task
    assert {"task.yml", "reference.py"} <= set(body["files"])
    archive = c.get("/api/v1/leaderboards/held/problem", params={"format": "zip"})
    assert archive.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(archive.content)) as z:
        unpacked = {name: z.read(name).decode() for name in z.namelist()}
    assert unpacked == {f"{body['problem']}/{rel}": text for rel, text in body["files"].items()}
    for text in (answer.text, *unpacked.values()):
        assert_hidden(text, "problem folder")
        assert seed not in text
    current = c.get("/api/v1/leaderboards/held/problem", headers={"If-None-Match": answer.headers["etag"]})
    assert current.status_code == 304 and not current.content
    page = c.get("/leaderboards/held").text
    assert 'href="/leaderboards/held/problem.zip"' in page
    with zipfile.ZipFile(io.BytesIO(c.get("/leaderboards/held/problem.zip").content)) as z:  # the page's link
        assert {name: z.read(name).decode() for name in z.namelist()} == unpacked
    c.patch("/api/v1/admin/leaderboards/held", headers=w.auth(w.admin), json={"visible": False})
    hidden = c.get("/api/v1/leaderboards/held/problem")
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "leaderboard_not_found"


def test_standings_late_and_join_surfaces_show_no_held_out_case(held_world: World) -> None:
    """The surfaces of a competition's end (issue 29): the standings and "after the deadline" pages and routes, final
    standings frozen after system tests, an admitted late entry, the bot's /leaderboard standings and the CLI's table,
    and the join form; counts of held-out cases only."""
    from bot.standings import standings_reply
    from kernelcup.commands.competition import late_lines
    from kernelcup.commands.standings import standings_table
    from leaderboards.results import UserRef

    w, c = held_world, held_world.client
    w.submit(w.ann, mode="ranked", leaderboard="held", devices="cpu")
    w.serve()
    w.service.update_leaderboard("held", deadline=w.service.clock() - timedelta(minutes=1), force=True)
    late = w.submit(w.bob, mode="ranked", leaderboard="held", devices="cpu").json()["submission_id"]
    w.serve()
    system_tests(w)
    r = c.post(f"/api/v1/admin/submissions/{late}/admit", headers=w.auth(w.admin), json={"reason": "an outage"})
    assert r.status_code == 200, r.text
    assert w.service.competition_tick() == [  # bob's (ann's ran after the deadline); no entry on H100
        "held: queued 1 system tests at the deadline",
        "held: froze the final standings on H100",
    ]
    launcher = FakeLauncher()
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    runner = SystemTestRunner(w.service, lambda _d: launcher, 10.0)
    asyncio.run(Worker(w.service, lambda _d: launcher, settings, system_tests=runner).run(once=True))
    assert w.service.competition_tick() == ["held: froze the final standings on cpu"]
    texts = [
        c.get(path, params={"device": "cpu"}, headers=w.auth(token) if token else {}).text
        for path in ("/leaderboards/held/standings", "/leaderboards/held/late", "/api/v1/leaderboards/held/late",
                     "/api/v1/leaderboards/held/standings", "/join")
        for token in (None, w.ann, w.admin)
    ]  # fmt: skip
    assert "2 of 2 held-out cases" in texts[0] and "an outage" in texts[0]
    final = w.service.standings("held", "cpu", final=True)
    texts += [standings_reply(w.service, "held", ["cpu"], True, UserRef("ann")), repr(final)]
    texts += ["\n".join(late_lines(w.service.late_submissions("held"))), repr(standings_table(final).columns)]
    for text in texts:
        assert_hidden(text, "competition surfaces")
    assert [(r.user_name, r.coverage) for r in final.rows][:1] == [("ann", "2 of 2 held-out cases")]
