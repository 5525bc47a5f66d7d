"""The lease of a re-timing round (and of a system test, a rejudge) covers the wait its worker allows each run beyond
its limit (the worker's launch margin, or a remote launcher's longer ``wait_margin_s``): a round whose runs are slow
to start is not taken over by a second worker while it runs, and its result is not refused. On SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from test_retiming import SPEED, clock, svc  # noqa: F401  (fixtures)

from leaderboards.models import RetimeRound
from leaderboards.queue import JobQueue
from leaderboards.retiming import LEASE_MARGIN_S, RetimeRunner
from leaderboards.service import LeaderboardService
from runners.contract import RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

MARGIN_S = 120.0


class SlowToStart(FakeLauncher):
    """A remote launcher that may wait long for a machine (a Modal cold start, a GitHub queue)."""

    @property
    def wait_margin_s(self) -> float:
        return 900.0


def run_round(service: LeaderboardService, launcher: FakeLauncher) -> list[Any]:
    """One round on the only live worker; what its store returned."""
    stored: list[Any] = []

    async def db(fn: Any, *args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if args and getattr(args[0], "__name__", "") == "record_retime_round":
            stored.append(out)
        return out

    runner = RetimeRunner(service, lambda _d: launcher, MARGIN_S)
    assert asyncio.run(runner.run_one("only", ["cpu"], db))
    return stored


def test_a_round_whose_runs_start_slowly_stays_within_its_lease(svc: LeaderboardService, clock: Any) -> None:  # noqa: F811
    JobQueue(svc.db, clock=svc.clock).register_worker("only", ["cpu"])
    svc.queue_retiming("add", actor="admin", top=3, rounds=2)
    taken_over: list[bool] = []

    def respond(request: RunRequest) -> RunResult:
        clock.now += timedelta(seconds=request.time_limit_s() + 50)  # within the bound of the launch: limit + margin
        with svc.db.transaction() as s:
            mine = s.scalar(select(RetimeRound.id).where(RetimeRound.lease_owner.like("only#%")))
        other = svc.claim_retime_round("other", ["cpu"])  # (the other round, still queued, is free to take)
        taken_over.append(other is not None and other.round_id == mine)
        return accepted_result(request, SPEED[request.submission.content])

    assert run_round(svc, FakeLauncher(respond)) == [True]  # stored, not refused as taken over
    assert taken_over == [False, False, False]


def test_a_rounds_lease_covers_a_remote_launchers_longer_wait(svc: LeaderboardService, clock: Any) -> None:  # noqa: F811
    JobQueue(svc.db, clock=svc.clock).register_worker("only", ["cpu"])
    svc.queue_retiming("add", actor="admin", top=3, rounds=2)
    leases: list[float] = []
    limits: list[float] = []

    def respond(request: RunRequest) -> RunResult:
        limits.append(request.time_limit_s())
        with svc.db.transaction() as s:
            expires = s.scalar(select(RetimeRound.lease_expires_at).where(RetimeRound.status == "running"))
            assert expires is not None
            leases.append((expires - clock.now).total_seconds())
        return accepted_result(request, SPEED[request.submission.content])

    assert run_round(svc, SlowToStart(respond)) == [True]
    assert leases[0] >= sum(limit + 900.0 for limit in limits) + LEASE_MARGIN_S
