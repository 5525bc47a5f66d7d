"""/admin/retiming (issue 29): an admin queues the re-timing of a board's finalists from a form (CSRF-checked, the
API's bounds) and reads the latest re-timing of each device: pooled scores, 95% intervals, shared ranks, each
machine's figure and the rounds queued, running, done and failed. Others are refused; no held-out case shows."""

from __future__ import annotations

import asyncio
import random
import re

import pytest
import yaml
from helpers import future, write_problem
from web_world import World, csrf_of

from leaderboards.errors import NotFound
from leaderboards.problems import load_problem
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.retiming import RetimeRunner
from runners.launchers.fake import FakeLauncher, accepted_result

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SHAPES = ("918273", "645127")  # held-out sizes no other number of the world has
SPEED = {"ann": 1000.0, "bob": 1000.0, "cy": 3000.0}  # ann and bob: the same kernel under two names


def sign_in(world: World, token: str) -> None:
    page = world.client.get("/signin")
    r = world.client.post(
        "/signin", data={"token": token, "csrf": csrf_of(page.text), "next": "/me"}, follow_redirects=False
    )
    assert r.status_code == 303, r.text


@pytest.fixture
def held(world: World) -> World:
    """A board ``held`` on cpu whose problem has held-out cases, with three ranked entries: ann's and bob's run as
    fast as each other, cy's three times slower (by the marker in each file, which the fake launcher reads)."""
    path = write_problem(world.problems, "held")
    task = yaml.safe_load((path / "task.yml").read_text())
    task["holdout"] = [{"size": int(SHAPES[0]), "seed": 4242}, {"size": int(SHAPES[1]), "seed": 4343}]
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    world.service.create_leaderboard(load_problem(path), deadline=future(), devices=["cpu", "H100"])
    cy = world.service.create_token(UserRef("cy")).token
    for token, user in ((world.ann, "ann"), (world.bob, "bob"), (cy, "cy")):
        code = f"def custom_kernel(d):\n    return d  # {user}\n".encode()
        r = world.submit(token, mode="ranked", leaderboard="held", devices="cpu", content=code)
        assert r.status_code == 202, r.text
    world.serve(FakeLauncher(lambda r: accepted_result(r, speed(r.submission.content))))
    return world


def speed(content: bytes) -> float:
    user = content.decode().rsplit("# ", 1)[1].strip()
    return SPEED[user]


def drain(world: World, worker_id: str, *, limit: int | None = None) -> int:
    """Rounds ``worker_id`` runs (with a fake machine: each file at its speed, with 0.3% noise from run to run)."""
    noise = random.Random(1)
    launcher = FakeLauncher(lambda r: accepted_result(r, speed(r.submission.content) * noise.gauss(1.0, 0.003)))
    runner = RetimeRunner(world.service, lambda _d: launcher, 10.0)

    async def db(fn, *args, **kwargs):
        return fn(*args, **kwargs)

    async def run() -> int:
        ran = 0
        while (limit is None or ran < limit) and await runner.run_one(worker_id, ["cpu"], db):
            ran += 1
        return ran

    return asyncio.run(run())


def cells(html: str) -> list[list[str]]:
    """The re-timing table's rows, each cell's text."""
    body = html.split("The latest re-timing", 1)[1]
    rows = re.findall(r"<tr>(<td.*?)</tr>", body)
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)] for row in rows]


def test_an_admin_queues_a_retiming_from_the_form_and_reads_ties_and_progress(held: World) -> None:
    c = held.client
    sign_in(held, held.admin)
    page = c.get("/admin/retiming")
    assert page.status_code == 200 and "Queue a re-timing" in page.text and 'value="held"' in page.text
    assert 'href="/admin/retiming"' in c.get("/admin").text  # the admin page links to it
    token = csrf_of(page.text)
    JobQueue(held.service.db).register_worker("box-1", ["cpu"])

    r = c.post("/admin/retiming", data={"leaderboard": "held", "device": "cpu", "top": "3", "rounds": "6",
                                        "csrf": token})  # fmt: skip
    assert r.status_code == 200, r.text
    assert "held on cpu: queued 6 interleaved rounds of 3 entries, spread over box-1." in r.text
    assert "rounds: 6 queued, 0 running, 0 done, 0 failed" in r.text
    assert "fewer than two rounds have run: nothing to rank yet" in r.text

    assert drain(held, "box-1", limit=1) == 1
    partial = c.get("/admin/retiming", params={"leaderboard": "held", "device": "cpu"}).text
    assert "rounds: 5 queued, 0 running, 1 done, 0 failed" in partial and "Nothing ranked yet" in partial

    assert drain(held, "box-1") == 5
    done = c.get("/admin/retiming", params={"leaderboard": "held"})  # every device: H100 was never re-timed
    assert done.status_code == 200
    assert "held on cpu: re-timed, 6 of 6 rounds on 1 machine" in done.text
    assert "rounds: 0 queued, 0 running, 6 done, 0 failed" in done.text
    assert "held has not been re-timed on H100." in done.text
    rows = {row[1]: row for row in cells(done.text)}
    assert (rows["ann"][0], rows["bob"][0], rows["cy"][0]) == ("1=", "1=", "3")  # identical speeds share rank 1
    assert rows["cy"][2].endswith("µs") and "–" in rows["ann"][3]  # pooled score, its 95% interval
    assert rows["ann"][4] == "6" and rows["ann"][5].startswith("box-1") and "(6)" in rows["ann"][5]
    assert "&#39;=&#39; marks entries the paired compare cannot tell apart (95%)" in done.text
    for shape in SHAPES:  # neither in the forms, the view, nor anything else on the page
        assert shape not in done.text and shape not in r.text


def test_the_form_keeps_the_apis_bounds_and_says_what_is_wrong(held: World) -> None:
    c = held.client
    sign_in(held, held.admin)
    token = csrf_of(c.get("/admin/retiming").text)
    for field, value in (("top", "1"), ("top", "1001"), ("rounds", "1"), ("rounds", "51")):
        data = {"leaderboard": "held", "top": "3", "rounds": "4", field: value, "csrf": token}
        assert c.post("/admin/retiming", data=data).status_code == 422, (field, value)
    r = c.post("/admin/retiming", data={"leaderboard": "held", "device": "A100", "csrf": token})
    assert r.status_code == 422 and "A100" in r.text  # a device the board does not run on: the service's message
    r = c.post("/admin/retiming", data={"leaderboard": "nope", "csrf": token})
    assert r.status_code == 422 and "nope" in r.text
    r = c.post("/admin/retiming", data={"leaderboard": "add", "csrf": token})  # no ranked entries on it
    assert r.status_code == 200 and "add: nothing to re-time (no device has two ranked entries)." in r.text
    assert c.get("/admin/retiming", params={"leaderboard": "held", "device": "A100"}).status_code == 422
    assert c.get("/admin/retiming", params={"leaderboard": "nope"}).status_code == 404


def test_only_admins_and_only_with_the_pages_csrf_token(held: World) -> None:
    c = held.client
    assert c.get("/admin/retiming", follow_redirects=False).status_code in (302, 303)  # nobody: sign in first
    sign_in(held, held.ann)
    assert c.get("/admin/retiming").status_code == 403
    token = csrf_of(c.get("/me").text)
    r = c.post("/admin/retiming", data={"leaderboard": "held", "top": "3", "rounds": "4", "csrf": token})
    assert r.status_code == 403
    sign_in(held, held.admin)
    r = c.post("/admin/retiming", data={"leaderboard": "held", "top": "3", "rounds": "4", "csrf": "forged"})
    assert r.status_code == 403
    with pytest.raises(NotFound, match="has not been re-timed"):  # neither refusal queued anything
        held.service.retiming("held", "cpu")
