"""/admin retime and /admin retiming through SimCord (issue 29): admins only; the rounds are queued on the live
machines and the pooled result reads with ranks, ties and each machine's figure."""

from __future__ import annotations

import pytest
from bot_fakes import accepted, launcher
from bot_steps import GOOD, raised, runner_online, serve_queue

from bot.commands.admin import NOT_ADMIN
from bot.replies import Refused
from leaderboards.results import UserRef
from leaderboards.retiming import RetimeRunner

pytestmark = pytest.mark.anyio


async def test_an_admin_retimes_and_reads_the_result(world) -> None:
    for member, median in ((world.alice, 20_000), (world.bob, 10_000)):
        world.service.submit(UserRef(member.name, member.id), "k.py", GOOD, "addone", ["cpu"], "ranked")
        await serve_queue(world, launcher(lambda r, m=median: accepted(r, m)))
    refused = await world.alice.slash(world.channel, "admin retime", leaderboard="addone")
    assert refused.response.content == NOT_ADMIN
    runner_online(world, "cpu")
    queued = await world.admin.slash(world.channel, "admin retime", leaderboard="addone", rounds=2, device="cpu")
    assert queued.ephemeral
    assert "**addone** on **cpu**: queued 2 interleaved rounds of 2 entries, spread over `worker-cpu`" in (
        queued.response.content)  # fmt: skip

    fake = launcher(lambda r: accepted(r, 10_000 if r.submission.content == GOOD else 20_000))

    async def db(fn, *args, **kwargs):
        return fn(*args, **kwargs)

    runner = RetimeRunner(world.service, lambda _d: fake, 10.0)
    while await runner.run_one("worker-cpu", ["cpu"], db):
        pass
    shown = await world.admin.slash(world.channel, "admin retiming", leaderboard="addone", device="cpu")
    text = shown.response.content
    assert "re-timed, 2 of 2 rounds on 1 machine" in text
    rows = text.split("```")[1].strip().splitlines()
    assert rows[1].split()[0] == "1=" and rows[2].split()[0] == "1="  # one file under two names: tied
    assert "worker-cpu" in text.split("```")[2]
    assert [type(e) for e in raised(world)] == [Refused]
