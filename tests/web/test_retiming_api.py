"""The finalists' re-timing through the admin API (issue 29): POST /admin/leaderboards/{name}/retime queues
interleaved rounds spread over the live workers, GET .../retiming reads the pooled result; admins only."""

from __future__ import annotations

import asyncio

from web_world import World, error_of

from leaderboards.queue import JobQueue
from leaderboards.retiming import RetimeRunner
from runners.launchers.fake import FakeLauncher, accepted_result

API = "/api/v1"


def test_an_admin_retimes_the_finalists_and_reads_the_result(world: World) -> None:
    c = world.client
    for token, median in ((world.ann, 1000.0), (world.bob, 3000.0)):
        code = f"def custom_kernel(d):\n    return d  # {median}\n".encode()
        assert world.submit(token, mode="ranked", devices="cpu", content=code).status_code == 202
        world.serve(FakeLauncher(lambda r, m=median: accepted_result(r, m)))
    as_ann, as_admin = world.auth(world.ann), world.auth(world.admin)
    retime, retiming = f"{API}/admin/leaderboards/add/retime", f"{API}/admin/leaderboards/add/retiming"
    assert c.post(retime, headers=as_ann, json={}).status_code == 403
    assert c.get(retiming, headers=as_ann, params={"device": "cpu"}).status_code == 403
    none_yet = c.get(retiming, headers=as_admin, params={"device": "cpu"})
    assert none_yet.status_code == 404 and "has not been re-timed on cpu" in error_of(none_yet)["message"]
    assert c.post(retime, headers=as_admin, json={"top": 1}).status_code == 422

    JobQueue(world.service.db).register_worker("box-1", ["cpu"])
    queued = c.post(retime, headers=as_admin, json={"top": 2, "rounds": 4, "device": "cpu"})
    assert queued.status_code == 200, queued.text
    [batch] = queued.json()
    assert (batch["device"], batch["rounds"], batch["workers"], len(batch["entries"])) == ("cpu", 4, ["box-1"], 2)

    launcher = FakeLauncher(lambda r: accepted_result(r, 1000.0 if b"1000.0" in r.submission.content else 3000.0))
    runner = RetimeRunner(world.service, lambda _d: launcher, 10.0)

    async def db(fn, *args, **kwargs):
        return fn(*args, **kwargs)

    async def drain() -> None:
        while await runner.run_one("box-1", ["cpu"], db):
            pass

    asyncio.run(drain())
    shown = c.get(retiming, headers=as_admin, params={"device": "cpu"})
    assert shown.status_code == 200, shown.text
    view = shown.json()
    assert (view["done"], view["machines"]) == (4, 1)
    assert [(r["rank"], r["user_name"], r["tied"]) for r in view["rows"]] == [(1, "ann", False), (2, "bob", False)]
    assert view["rows"][0]["machines"][0]["machine"].startswith("box-1")
