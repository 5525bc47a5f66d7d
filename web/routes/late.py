"""After the deadline (issue 29, ``leaderboards/late.py``): ``GET /api/v1/leaderboards/{name}/late``, the "after the
deadline" list of practice submissions (never in a ranking or standings), and the admin's ``POST /api/v1/admin/
submissions/{id}/admit``, which lets one late ranked entry in ("late, admitted by X because Y", audited)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from leaderboards.late import LATE_LIST_MAX, MAX_REASON
from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from web.auth import admin, maybe_user, service_of
from web.routes.admin import forget_cached_reads
from web.routes.common import OFFSET_MAX, SubmissionId
from web.schemas import API_PREFIX, ErrorOut, LateEntryOut, LatePageOut

router = APIRouter(prefix=API_PREFIX)


class AdmitIn(BaseModel):
    reason: str = Field(min_length=1, max_length=MAX_REASON, description="Why it is let in: shown with the entry.")


@router.get(
    "/leaderboards/{name}/late",
    response_model=LatePageOut,
    tags=["leaderboards"],
    summary="Submissions after the deadline (unranked practice)",
    responses={404: {"model": ErrorOut, "description": "No such leaderboard"}},
)
def get_late(
    name: str,
    limit: int = Query(50, ge=1, le=LATE_LIST_MAX, description="Rows per page."),
    offset: int = Query(0, ge=0, le=OFFSET_MAX, description="Rows to skip (page with it)."),
    who: Principal | None = Depends(maybe_user),
    service: LeaderboardService = Depends(service_of),
) -> LatePageOut:
    """Newest first: each submission made after the deadline with its jobs' status, verdict and score. They run as
    practice and rank nowhere, unless an admin admitted one (its note says by whom and why)."""
    viewer = who.user if who is not None else None
    return LatePageOut.model_validate(service.late_submissions(name, viewer=viewer, limit=limit, offset=offset))


@router.post(
    "/admin/submissions/{submission_id}/admit",
    response_model=LateEntryOut,
    tags=["admin"],
    summary="Let one late ranked entry in as ranked",
    responses={403: {"model": ErrorOut, "description": "The token lacks the admin scope"}},
)
def admit(
    request: Request,
    submission_id: SubmissionId,
    body: AdmitIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> LateEntryOut:
    """It ranks like an entry made in time, shown as "late, admitted by you because REASON"; final standings frozen
    without it are thawed and made again with it (after its system test, where the problem has held-out cases)."""
    entry = service.admit_late(submission_id, actor=who.actor, reason=body.reason)
    forget_cached_reads(request)
    return LateEntryOut.model_validate(entry)
