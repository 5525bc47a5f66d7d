"""Moderation, the audit log, rejudges and alerts (issue 29), for a token with the admin scope:

- ``POST /api/v1/admin/submissions/{id}/moderation`` sets an entry's state (flagged, quarantined, hacked, cleared)
  with a reason; ``GET /api/v1/admin/moderation`` lists moderated entries;
- ``GET /api/v1/admin/audit``: the audit log, filtered by actor, action, leaderboard and time, paged by ``before``;
- ``POST /api/v1/admin/leaderboards/{name}/rejudge`` and ``GET …/rejudges``: rejudges and their drift;
- ``GET /api/v1/admin/alerts`` and ``POST /api/v1/admin/alerts/{id}/resolve``.

And for everyone, ``GET /api/v1/leaderboards/{name}/drift``: each re-timed entry's "re-timed on torch X: -1.2%".
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, Field

from leaderboards.audit import MAX_PAGE
from leaderboards.moderation import MAX_LIST, MAX_REASON, ModerationState
from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from web.auth import admin, service_of
from web.routes.admin import forget_cached_reads
from web.routes.common import ID_MAX, SubmissionId
from web.schemas import API_PREFIX, ErrorOut, Model

router = APIRouter(prefix=API_PREFIX)
ADMIN: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No valid token"},
    403: {"model": ErrorOut, "description": "The token lacks the admin scope"},
}
AlertId = Annotated[int, Path(ge=1, le=ID_MAX, description="The alert's id.")]


class ModerateIn(BaseModel):
    state: ModerationState
    reason: str = Field(min_length=1, max_length=MAX_REASON, description="Why: the author reads it.")


class ModerationOut(Model):
    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    state: str
    reason: str
    by: str
    at: datetime


class AuditEntryOut(Model):
    entry_id: int
    at: datetime
    actor: str
    action: str
    target: str
    detail: dict[str, Any] = Field(description="What the act changed; secrets (seeds, tokens, code) are withheld.")


class AuditPageOut(Model):
    entries: tuple[AuditEntryOut, ...]
    next_before: int | None = Field(description="Pass as `before` for the next (older) page; null on the last.")


class RejudgeIn(BaseModel):
    top: int = Field(10, ge=1, le=1000, description="How many of each device's best entries.")
    device: str | None = Field(None, max_length=32, description="Only this device (default: every device).")


class RejudgeOut(Model):
    rejudge_id: int
    leaderboard: str
    device: str
    submission_id: int
    user_name: str
    trigger: str = Field(description="admin, or runtime (a runner reported a new runtime).")
    status: str
    old_score_ns: float | None
    new_score_ns: float | None
    drift: float | None = Field(description="new / old - 1.")
    passed: bool | None
    reference_drift: float | None = Field(description="The reference's medians, new / old - 1.")
    runtime: str | None
    requested_by: str
    created_at: datetime
    finished_at: datetime | None
    text: str


class AlertOut(Model):
    alert_id: int
    leaderboard: str | None
    device: str | None
    kind: str
    message: str
    holds_announcements: bool
    created_at: datetime
    resolved_at: datetime | None
    resolved_by: str | None


class ResolveIn(BaseModel):
    reason: str = Field(min_length=1, max_length=1000)


class DriftOut(Model):
    submission_id: int
    note: str


@router.post(
    "/admin/submissions/{submission_id}/moderation",
    response_model=ModerationOut,
    tags=["admin"],
    responses=ADMIN,
    summary="Flag, quarantine, judge hacked or clear an entry",
)
def moderate(
    request: Request,
    submission_id: SubmissionId,
    body: ModerateIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> ModerationOut:
    """Quarantined and hacked entries leave every ranking at once; cleared ones come back. Audited."""
    view = service.moderate(submission_id, body.state, actor=who.actor, reason=body.reason)
    forget_cached_reads(request)
    return ModerationOut.model_validate(view)


@router.get(
    "/admin/moderation",
    response_model=list[ModerationOut],
    tags=["admin"],
    responses=ADMIN,
    summary="Moderated entries",
)
def moderated(
    state: ModerationState | None = None,
    leaderboard: str | None = Query(None, max_length=100),
    limit: int = Query(100, ge=1, le=MAX_LIST),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> list[ModerationOut]:
    return [
        ModerationOut.model_validate(v) for v in service.moderated(leaderboard=leaderboard, state=state, limit=limit)
    ]


@router.get("/admin/audit", response_model=AuditPageOut, tags=["admin"], responses=ADMIN, summary="The audit log")
def audit(
    actor: str | None = Query(None, max_length=200, description="Exactly this actor (e.g. discord:1)."),
    action: str | None = Query(None, max_length=64, description="Exactly this action (e.g. moderate, ban)."),
    leaderboard: str | None = Query(None, max_length=100, description="Entries about this leaderboard."),
    since: datetime | None = Query(None, description="Entries at or after this time (ISO 8601 with a zone)."),
    before: int | None = Query(None, ge=1, le=ID_MAX, description="Entries older than this entry id (paging)."),
    limit: int = Query(50, ge=1, le=MAX_PAGE),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> AuditPageOut:
    """Newest first. Page back with `before` = the answer's `next_before`."""
    page = service.audit_log(actor=actor, action=action, leaderboard=leaderboard, since=since, before=before,
                             limit=limit)  # fmt: skip
    return AuditPageOut.model_validate(page)


@router.post(
    "/admin/leaderboards/{name}/rejudge",
    response_model=list[RejudgeOut],
    tags=["admin"],
    responses=ADMIN,
    summary="Run the best entries again, below everyone's submissions",
)
def rejudge(
    name: str, body: RejudgeIn, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> list[RejudgeOut]:
    """Each device's (or one device's) top entries run again; their old results stay their score, the new score and
    the drift are kept with the rejudge (``kernelcup leaderboard rejudge``)."""
    views = service.queue_rejudges(name, actor=who.actor, top=body.top, device=body.device)
    return [RejudgeOut.model_validate(v) for v in views]


@router.get(
    "/admin/leaderboards/{name}/rejudges",
    response_model=list[RejudgeOut],
    tags=["admin"],
    responses=ADMIN,
    summary="A leaderboard's rejudges and their drift",
)
def rejudges(
    name: str,
    device: str | None = Query(None, max_length=32),
    limit: int = Query(100, ge=1, le=MAX_LIST),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> list[RejudgeOut]:
    return [RejudgeOut.model_validate(v) for v in service.rejudges(name, device, limit=limit)]


@router.get("/admin/alerts", response_model=list[AlertOut], tags=["admin"], responses=ADMIN, summary="Admin alerts")
def alerts(
    include_resolved: bool = False,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> list[AlertOut]:
    return [AlertOut.model_validate(a) for a in service.alerts(include_resolved=include_resolved)]


@router.post(
    "/admin/alerts/{alert_id}/resolve",
    response_model=AlertOut,
    tags=["admin"],
    responses=ADMIN,
    summary="Resolve an alert (announcements it held go on)",
)
def resolve(
    alert_id: AlertId,
    body: ResolveIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> AlertOut:
    return AlertOut.model_validate(service.resolve_alert(alert_id, actor=who.actor, reason=body.reason))


@router.get(
    "/leaderboards/{name}/drift",
    response_model=list[DriftOut],
    tags=["leaderboards"],
    summary="Re-timed entries: 're-timed on torch X: -1.2%'",
)
def drift(
    name: str, device: str | None = Query(None, max_length=32), service: LeaderboardService = Depends(service_of)
) -> list[DriftOut]:
    """The latest rejudge of each re-timed entry on a device (the only one of a one-device board when not named)."""
    return [DriftOut(submission_id=k, note=v) for k, v in sorted(service.drift_notes(name, device).items())]
