"""Standings of a competition (issue 29): ``GET /api/v1/leaderboards/{name}/standings`` (live, or ``final=true``) and
the admin's ``POST /api/v1/admin/leaderboards/{name}/system-tests``; the finalists' re-timing (``POST .../retime``,
``GET .../retiming``, admins). Counts of held-out cases only, never a case."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from leaderboards.results import Principal
from leaderboards.retiming import DEFAULT_RETIME_ROUNDS, MAX_RETIME_ROUNDS
from leaderboards.service import LeaderboardService
from web.auth import MaybeUser, admin, service_of, viewer_of
from web.schemas import API_PREFIX, ErrorOut, Model, StandingsOut

router = APIRouter(prefix=API_PREFIX)


class SystemTestsIn(BaseModel):
    top: int = Field(default=10, ge=1, le=1000, description="How many entries per device.")


class CoverageOut(Model):
    device: str
    submission_id: int
    user_name: str
    status: str
    cases: int
    passed: int | None
    score_ns: float | None = Field(
        None, description="Where the problem times its held-out cases: the entry's one figure over them."
    )


class SystemTestsOut(Model):
    leaderboard: str
    top: int
    cases: int
    entries: tuple[CoverageOut, ...]


@router.get(
    "/leaderboards/{name}/standings",
    response_model=StandingsOut,
    tags=["leaderboards"],
    summary="Live or final standings on one device",
    responses={404: {"model": ErrorOut, "description": "No such leaderboard, or no final standings yet"}},
)
def get_standings(
    name: str,
    device: str | None = Query(None, max_length=32, description="The device (optional when there is one)."),
    final: bool = Query(False, description="The frozen final standings, made after the deadline's system tests."),
    service: LeaderboardService = Depends(service_of),
    who: MaybeUser = None,
) -> StandingsOut:
    """Live: the ranking's top entries with their held-out coverage once system tests ran. Final: only entries that
    passed every held-out case, ranked with ties where their 95% intervals cannot tell them apart."""
    return StandingsOut.model_validate(service.standings(name, device, final=final, viewer=viewer_of(who)))


@router.post(
    "/admin/leaderboards/{name}/system-tests",
    response_model=SystemTestsOut,
    tags=["admin"],
    summary="Queue the system tests of each device's top entries",
    responses={403: {"model": ErrorOut, "description": "The token lacks the admin scope"}},
)
def queue_system_tests(
    name: str, body: SystemTestsIn, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> SystemTestsOut:
    """Each device's top entries run on the problem's held-out cases, below everyone's submissions; only pass counts
    are kept (``kernelcup leaderboard system-test``)."""
    return SystemTestsOut.model_validate(service.queue_system_tests(name, actor=who.actor, top=body.top))


class RetimeIn(BaseModel):
    top: int = Field(10, ge=2, le=1000, description="How many of each device's best entries (two at least).")
    rounds: int = Field(DEFAULT_RETIME_ROUNDS, ge=2, le=MAX_RETIME_ROUNDS, description="Interleaved rounds.")
    device: str | None = Field(None, max_length=32, description="Only this device.")


class RetimeQueuedOut(Model):
    leaderboard: str
    device: str
    batch: str
    rounds: int
    entries: tuple[int, ...] = Field(description="The submissions re-timed, best first.")
    workers: tuple[str, ...] = Field(description="The live workers the rounds were spread over.")


class MachineFigureOut(Model):
    machine: str = Field(description="The worker that ran the rounds and the runtime it reported.")
    rounds: int
    score_ns: float


class RetimedRowOut(Model):
    rank: int
    tied: bool = Field(description="The compare machinery cannot tell it from another entry of that rank (95%).")
    user_name: str
    submission_id: int
    score_ns: float = Field(description="The geometric mean of its scores over every round that ran.")
    low_ns: float
    high_ns: float
    rounds: int
    machines: tuple[MachineFigureOut, ...]


class RetimingOut(Model):
    leaderboard: str
    device: str
    batch: str
    rounds: int
    done: int
    running: int = Field(0, description="Rounds a worker holds now.")
    rounds_failed: int = Field(0, description="Rounds that failed (queued = rounds - done - running - rounds_failed).")
    machines: int
    rows: tuple[RetimedRowOut, ...]
    failed: tuple[int, ...] = Field(description="Entries whose run failed in some round (not ranked here).")


@router.post(
    "/admin/leaderboards/{name}/retime",
    response_model=list[RetimeQueuedOut],
    tags=["admin"],
    summary="Re-time each device's top entries interleaved, spread over its live workers",
    responses={403: {"model": ErrorOut, "description": "The token lacks the admin scope"}},
)
def queue_retiming(
    name: str, body: RetimeIn, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> list[RetimeQueuedOut]:
    """``rounds`` rounds, each one benchmark run of every entry on one machine on the same inputs, the order
    alternating; round r goes to the r-th live worker serving the device (``kernelcup leaderboard retime``)."""
    queued = service.queue_retiming(name, actor=who.actor, top=body.top, rounds=body.rounds, device=body.device)
    return [RetimeQueuedOut.model_validate(q) for q in queued]


@router.get(
    "/admin/leaderboards/{name}/retiming",
    response_model=RetimingOut,
    tags=["admin"],
    summary="The latest re-timing of a device: pooled scores, intervals, ties and each machine's figure",
    responses={403: {"model": ErrorOut, "description": "The token lacks the admin scope"}},
)
def get_retiming(
    name: str,
    device: str | None = Query(None, max_length=32, description="The device (optional when there is one)."),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> RetimingOut:
    return RetimingOut.model_validate(service.retiming(name, device))
