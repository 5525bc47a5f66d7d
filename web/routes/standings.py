"""Standings of a competition (issue 29): ``GET /api/v1/leaderboards/{name}/standings`` (live, or ``final=true``) and
the admin's ``POST /api/v1/admin/leaderboards/{name}/system-tests``. Counts of held-out cases only, never a case."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from web.auth import MaybeUser, admin, service_of, viewer_of
from web.schemas import API_PREFIX, ErrorOut, Model

router = APIRouter(prefix=API_PREFIX)


class StandingRowOut(Model):
    rank: int
    tied: bool = Field(description="Another entry shares the rank: their scores cannot be told apart (95%).")
    user_name: str
    submission_id: int
    file_name: str
    score_ns: float
    low_ns: float | None = Field(description="The score's 95% interval (final standings only).")
    high_ns: float | None
    coverage: str | None = Field(description="'5 of 5 held-out cases' once the entry's system test ran.")
    note: str | None = Field(
        None,
        description="'late, admitted by X because Y' for an entry an admin let in late; 're-timed on torch X: -1.2%' "
        "for one a rejudge ran again (live standings); '; ' between two.",
    )


class ExcludedRowOut(Model):
    user_name: str
    submission_id: int
    coverage: str


class StandingsOut(Model):
    leaderboard: str
    device: str
    final: bool
    frozen_at: datetime | None
    rows: tuple[StandingRowOut, ...]
    excluded: tuple[ExcludedRowOut, ...] = Field(description="Entries that failed a held-out case (final standings).")


class SystemTestsIn(BaseModel):
    top: int = Field(default=10, ge=1, le=1000, description="How many entries per device.")


class CoverageOut(Model):
    device: str
    submission_id: int
    user_name: str
    status: str
    cases: int
    passed: int | None


class SystemTestsOut(Model):
    leaderboard: str
    top: int
    cases: int
    entries: tuple[CoverageOut, ...]
    already: bool = Field(
        default=False, description="The system tests had been queued before: nothing was queued again."
    )


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
