"""Re-timing the finalists interleaved, spread over every live worker serving the device (issue 29,
``leaderboards/retiming.py``): rounds alternate their order and share one seed, each live worker runs its own rounds
(two in-process workers with fake launchers here, one machine reading 3% slower than the other), a dead worker's
rounds are taken over, the results are pooled with each machine's figure kept, and ties are the compare machinery's."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import write_problem
from sqlalchemy import select
from test_system_tests import Clock

from leaderboards.db import Database
from leaderboards.errors import InvalidChange, NotFound
from leaderboards.models import AuditLog, FinalStanding, RetimeRound
from leaderboards.problems import load_problem
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.retiming import RetimeRunner
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode, RunRequest, RunResult, SystemInfo, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result

A = b"def custom_kernel(data):\n    return data  # a\n"
B = b"def custom_kernel(data):\n    return data  # b, the same kernel under another name\n"
C = b"def custom_kernel(data):\n    return list(data)  # twice as slow\n"
SPEED = {A: 1000.0, B: 1000.0, C: 2000.0}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock) -> LeaderboardService:
    service = LeaderboardService(database, settings, clock=clock)
    path = write_problem(tmp_path / "problems")
    service.create_leaderboard(load_problem(path), deadline=clock.now + timedelta(days=1), devices=["cpu"])
    for user, code in (("ann", A), ("bob", B), ("cy", C)):
        service.submit(UserRef(user), "k.py", code, "add", ["cpu"], Mode.RANKED)
    from test_system_tests import serve

    serve(service, FakeLauncher(lambda r: accepted_result(r, SPEED[r.submission.content])))
    return service


def machine(torch: str, offset: float, seed: int) -> FakeLauncher:
    """A machine: every kernel at its speed times ``offset``, with 0.3% noise per run, reporting ``torch``."""
    noise = random.Random(seed)

    def respond(request: RunRequest) -> RunResult:
        result = accepted_result(request, SPEED[request.submission.content] * offset * noise.gauss(1.0, 0.003))
        return result.model_copy(update={"system": SystemInfo(torch=torch, device="cpu")})

    return FakeLauncher(respond)


async def drain(svc: LeaderboardService, worker_id: str, launcher: FakeLauncher) -> int:
    """Rounds this worker runs until none is left for it."""
    runner = RetimeRunner(svc, lambda _d: launcher, 10.0)

    async def db(fn, *args, **kwargs):
        return fn(*args, **kwargs)

    ran = 0
    while await runner.run_one(worker_id, ["cpu"], db):
        ran += 1
    return ran


def test_rounds_spread_over_two_live_workers_and_pool_with_each_machines_figure(svc: LeaderboardService) -> None:
    queue = JobQueue(svc.db, clock=svc.clock)
    queue.register_worker("box-1", ["cpu"])
    queue.register_worker("box-2", ["cpu"])
    [queued] = svc.queue_retiming("add", actor="admin", top=3, rounds=6)
    assert queued.workers == ("box-1", "box-2") and queued.rounds == 6
    with svc.db.transaction() as s:
        rows = s.scalars(select(RetimeRound).order_by(RetimeRound.round)).all()
        assert [r.assigned_worker for r in rows] == ["box-1", "box-2"] * 3
        assert [r.entries for r in rows[:2]] == [list(queued.entries), list(queued.entries)[::-1]]  # alternating
        assert len({r.seed for r in rows}) == 1  # one batch, the same inputs for everyone
        assert s.scalars(select(AuditLog.action).where(AuditLog.action == "retime")).one() == "retime"

    one, two = machine("2.6.0", 1.0, 1), machine("2.7.0", 1.03, 2)  # box-2 reads 3% slower
    assert asyncio.run(drain(svc, "box-1", one)) == 3  # its own rounds only: box-2 is alive
    assert asyncio.run(drain(svc, "box-2", two)) == 3
    assert len(one.requests) == len(two.requests) == 9 and {r.seed for r in one.requests + two.requests} == {
        one.requests[0].seed}  # fmt: skip
    assert all(r.mode is Mode.BENCHMARK for r in one.requests)
    assert [r.submission.content for r in one.requests[:3]] == [A, B, C]  # round 0 (box-1): best first
    assert [r.submission.content for r in two.requests[:3]] == [C, B, A]  # round 1 (box-2): the other way

    view = svc.retiming("add")
    assert (view.rounds, view.done, view.machines) == (6, 6, 2)
    by_user = {r.user_name: r for r in view.rows}
    assert (by_user["ann"].rank, by_user["bob"].rank, by_user["cy"].rank) == (1, 1, 3)  # identical files tied
    assert by_user["ann"].tied and by_user["bob"].tied and not by_user["cy"].tied
    figures = {m.machine: m for m in by_user["ann"].machines}
    assert set(figures) == {"box-1 (torch 2.6.0)", "box-2 (torch 2.7.0)"}
    assert figures["box-2 (torch 2.7.0)"].score_ns / figures["box-1 (torch 2.6.0)"].score_ns == pytest.approx(
        1.03, rel=0.01)  # fmt: skip
    ann = by_user["ann"]
    assert ann.rounds == 6 and ann.low_ns < ann.score_ns < ann.high_ns
    assert by_user["cy"].score_ns / ann.score_ns == pytest.approx(2.0, rel=0.01)


def test_one_machine_runs_every_round_and_a_dead_workers_rounds_are_taken_over(
    svc: LeaderboardService, clock: Clock
) -> None:
    queue = JobQueue(svc.db, clock=svc.clock)
    queue.register_worker("only", ["cpu"])
    [queued] = svc.queue_retiming("add", actor="admin", top=2, rounds=4)
    assert queued.workers == ("only",) and queued.entries  # top 2 of 3
    launcher = machine("2.6.0", 1.0, 3)
    assert asyncio.run(drain(svc, "only", launcher)) == 4  # a single-machine deployment: all rounds on one GPU
    view = svc.retiming("add")
    assert view.machines == 1 and [len(r.machines) for r in view.rows] == [1, 1]

    queue.register_worker("gone", ["cpu"])
    svc.queue_retiming("add", actor="admin", top=3, rounds=2)  # spread over "only" and "gone"
    clock.now += timedelta(minutes=5)  # "gone" stopped heartbeating; "only" did not
    queue.register_worker("only", ["cpu"])
    assert asyncio.run(drain(svc, "only", launcher)) == 2  # its own round and the dead worker's
    assert svc.retiming("add").done == 2


def test_a_failed_run_leaves_its_entry_out_and_bad_requests_say_why(svc: LeaderboardService) -> None:
    svc.queue_retiming("add", actor="admin", top=3, rounds=2)

    def respond(request: RunRequest) -> RunResult:
        if request.submission.content == C:
            return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, message="wrong")
        return accepted_result(request, SPEED[request.submission.content])

    assert asyncio.run(drain(svc, "w", FakeLauncher(respond))) == 2
    view = svc.retiming("add")
    assert [r.user_name for r in view.rows] == ["ann", "bob"] and len(view.failed) == 1
    with pytest.raises(InvalidChange, match="from 2 to"):
        svc.queue_retiming("add", actor="admin", top=1)
    with pytest.raises(InvalidChange, match="--rounds"):
        svc.queue_retiming("add", actor="admin", rounds=99)


def test_a_runner_failure_requeues_the_round_and_nothing_to_read_says_so(svc: LeaderboardService) -> None:
    with pytest.raises(NotFound, match="has not been re-timed on cpu"):
        svc.retiming("add")
    svc.queue_retiming("add", actor="admin", top=2, rounds=2)
    broken = FakeLauncher(lambda r: RunResult(verdict=Verdict.INFRASTRUCTURE_ERROR, mode=r.mode, message="down"))
    runner = RetimeRunner(svc, lambda _d: broken, 10.0)

    async def db(fn, *args, **kwargs):
        return fn(*args, **kwargs)

    assert asyncio.run(runner.run_one("w", ["cpu"], db))
    with svc.db.transaction() as s:
        first = s.scalars(select(RetimeRound).order_by(RetimeRound.id)).first()
        assert first is not None and (first.status, first.note, first.attempts) == ("queued", "down", 1)


def test_the_deadline_retimes_the_finalists_and_the_final_standings_rank_by_the_rounds(
    svc: LeaderboardService, clock: Clock
) -> None:
    svc.settings.deadline_retime_rounds = 4
    clock.now += timedelta(days=2)  # past the deadline
    queue = JobQueue(svc.db, clock=svc.clock)
    queue.register_worker("box-1", ["cpu"])
    queue.register_worker("box-2", ["cpu"])
    assert svc.competition_tick() == ["add: queued 4 re-timing rounds on cpu"]
    assert svc.competition_tick() == []  # queued once; the freeze waits for the rounds
    with pytest.raises(InvalidChange, match="4 re-timing rounds of 'add' on cpu have not run yet"):
        svc.freeze_standings("add", "cpu", actor="admin")

    assert asyncio.run(drain(svc, "box-1", machine("2.6.0", 1.0, 5))) == 2
    assert asyncio.run(drain(svc, "box-2", machine("2.6.0", 1.02, 6))) == 2
    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    final = svc.standings("add", final=True)
    assert [(r.rank, r.tied, r.user_name) for r in final.rows] == [(1, True, "ann"), (1, True, "bob"), (3, False, "cy")]
    assert all(r.low_ns is not None and r.low_ns < r.score_ns < (r.high_ns or 0) for r in final.rows)
    with svc.db.transaction() as s:  # frozen with each round's statistics, machine and score
        [frozen] = s.scalars(select(FinalStanding)).all()
        assert [len(e["rounds"]) for e in frozen.entries] == [4, 4, 4]
        assert {r["machine"] for r in frozen.entries[0]["rounds"]} == {"box-1 (torch 2.6.0)", "box-2 (torch 2.6.0)"}
    assert svc.standings("add", final=True) == final  # recomputed from the frozen rounds: the same floats


FASTEST = b"def custom_kernel(data):\n    return data  # dan, ten times faster\n"
SPEED[FASTEST] = 100.0


def deadline_rounds_run(svc: LeaderboardService, clock: Clock, launcher: FakeLauncher) -> None:
    """Past the deadline with two re-timing rounds of the top entries, run on one machine."""
    svc.settings.deadline_retime_rounds = 2
    clock.now += timedelta(days=2)
    JobQueue(svc.db, clock=svc.clock).register_worker("box-1", ["cpu"])
    assert svc.competition_tick() == ["add: queued 2 re-timing rounds on cpu"]
    assert asyncio.run(drain(svc, "box-1", launcher)) == 2


def test_an_entry_wrong_on_the_re_timings_inputs_leaves_the_final_standings(
    svc: LeaderboardService, clock: Clock
) -> None:
    """A red team: ann answered wrong in every round and still ranked (below the slower cy, with no note)."""

    def respond(request: RunRequest) -> RunResult:
        if request.submission.content == A:
            return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, message="wrong")
        return accepted_result(request, SPEED[request.submission.content])

    deadline_rounds_run(svc, clock, FakeLauncher(respond))
    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    final = svc.standings("add", final=True)
    assert [(r.rank, r.user_name) for r in final.rows] == [(1, "bob"), (2, "cy")]
    assert [(e.user_name, e.coverage) for e in final.excluded] == [("ann", "wrong answer in a re-timing round")]


def test_rounds_that_no_longer_cover_the_top_entries_give_way_to_the_runs(
    svc: LeaderboardService, clock: Clock
) -> None:
    """A red team: dan, ten times faster, admitted late after the re-timing (or back from a quarantine), ranked below
    every re-timed entry. When the re-timed entries are no longer the top ones by runs, every entry ranks by its
    runs."""
    deadline_rounds_run(svc, clock, machine("2.6.0", 1.0, 5))
    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    assert [r.user_name for r in svc.standings("add", final=True).rows] == ["ann", "bob", "cy"]
    late = svc.submit(UserRef("dan"), "k.py", FASTEST, "add", ["cpu"], Mode.RANKED).submission_id
    from test_system_tests import serve

    serve(svc, FakeLauncher(lambda r: accepted_result(r, SPEED[r.submission.content])))
    svc.admit_late(late, actor="admin", reason="an outage")
    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    final = svc.standings("add", final=True)
    assert [r.user_name for r in final.rows] == ["dan", "ann", "bob", "cy"] and final.rows[0].rank == 1
    assert [r.rank for r in final.rows] == sorted(r.rank for r in final.rows)  # (100 ns is within 0.25 µs of 1 µs)
    with svc.db.transaction() as s:  # frozen without the stale rounds
        [frozen] = s.scalars(select(FinalStanding)).all()
        assert all("rounds" not in e for e in frozen.entries)


def test_a_re_timed_finalist_gone_before_the_freeze_leaves_the_others_their_rounds(
    svc: LeaderboardService, clock: Clock
) -> None:
    """A review: cy, re-timed with ann and bob, was banned before the freeze, and ann's and bob's rounds were dropped
    with cy's (the rounds no longer matched the top entries, counting cy)."""
    deadline_rounds_run(svc, clock, machine("2.6.0", 1.0, 5))
    svc.ban_user(UserRef("cy"), reason="spam", actor="admin")
    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    assert [r.user_name for r in svc.standings("add", final=True).rows] == ["ann", "bob"]
    with svc.db.transaction() as s:
        [frozen] = s.scalars(select(FinalStanding)).all()
        assert [len(e["rounds"]) for e in frozen.entries] == [2, 2]
