"""Invite codes to hidden leaderboards (issue 29, ``leaderboards/invites.py``): an admin makes, lists and withdraws
codes (``/api/v1/admin/…/invites``); anyone with a token joins with one (``POST /api/v1/join``). A code travels only in
a request's body and the answer that makes it, never in a URL (URLs are logged)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, Field

from leaderboards.invites import MAX_INVITE_DAYS, MAX_INVITE_USES
from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from web.auth import admin, service_of, submitter
from web.routes.admin import forget_cached_reads
from web.routes.common import ID_MAX, UserName, parse_user
from web.schemas import API_PREFIX, ErrorOut, InviteOut, JoinedOut, MemberOut, NewInviteOut

router = APIRouter(prefix=API_PREFIX)

CODE_FIELD_MAX = 200
"""The longest ``code`` a join's body may hold (the service refuses any longer than a code can be, saying so)."""


class InviteIn(BaseModel):
    uses: int = Field(1, ge=1, le=MAX_INVITE_USES, description="How many users may join with it.")
    expires_days: float | None = Field(
        7.0, gt=0, le=MAX_INVITE_DAYS, description="Days it stays valid; null: until withdrawn."
    )


class JoinIn(BaseModel):
    code: str = Field(min_length=1, max_length=CODE_FIELD_MAX, description="The invite code (kci_…).")


@router.post(
    "/admin/leaderboards/{name}/invites",
    response_model=NewInviteOut,
    status_code=201,
    tags=["admin"],
    summary="A new invite code to a hidden leaderboard",
    responses={403: {"model": ErrorOut, "description": "The token lacks the admin scope"}},
)
def create_invite(
    name: str, body: InviteIn, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> NewInviteOut:
    expires = timedelta(days=body.expires_days) if body.expires_days is not None else None
    return NewInviteOut.model_validate(service.create_invite(name, actor=who.actor, uses=body.uses, expires_in=expires))


@router.get("/admin/invites", response_model=list[InviteOut], tags=["admin"], summary="Invite codes (never the codes)")
def list_invites(
    leaderboard: str | None = Query(None, max_length=100, description="Only this leaderboard's."),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> list[InviteOut]:
    return [InviteOut.model_validate(i) for i in service.list_invites(leaderboard)]


@router.delete("/admin/invites/{invite_id}", response_model=InviteOut, tags=["admin"], summary="Withdraw a code")
def revoke_invite(
    invite_id: int = Path(ge=1, le=ID_MAX),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> InviteOut:
    """Nobody else joins with it; those who joined stay in."""
    return InviteOut.model_validate(service.revoke_invite(invite_id, actor=who.actor))


class MemberIn(BaseModel):
    user: str = Field(
        min_length=1, max_length=200, description="`discord:ID` or a local name (`local:NAME` or `NAME`)."
    )
    reason: str = Field("", max_length=500, description="Why: the audit log keeps it.")


_ADMIN_ONLY: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorOut, "description": "The token lacks the admin scope"}
}


@router.get(
    "/admin/leaderboards/{name}/members",
    response_model=list[MemberOut],
    tags=["admin"],
    summary="Who joined a hidden leaderboard, and how",
    responses=_ADMIN_ONLY,
)
def members(
    name: str, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> list[MemberOut]:
    """Its members, earliest first, each with the invite they joined by (its id and prefix) or none (an admin added
    them)."""
    return [MemberOut.model_validate(m) for m in service.board_members(name)]


@router.post(
    "/admin/leaderboards/{name}/members",
    response_model=MemberOut,
    status_code=201,
    tags=["admin"],
    summary="Let a user into a hidden leaderboard without a code",
    responses=_ADMIN_ONLY,
)
def add_member(
    request: Request,
    name: str,
    body: MemberIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> MemberOut:
    view = service.add_member(name, parse_user(body.user), actor=who.actor, reason=body.reason)
    forget_cached_reads(request)
    return MemberOut.model_validate(view)


@router.delete(
    "/admin/leaderboards/{name}/members/{user}",
    response_model=MemberOut,
    tags=["admin"],
    summary="Take a member out of a hidden leaderboard",
    responses=_ADMIN_ONLY,
)
def remove_member(
    request: Request,
    name: str,
    user: UserName,
    reason: str = Query("", max_length=500, description="Why: the audit log keeps it."),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> MemberOut:
    """The board is hidden from them again; their submissions stay."""
    view = service.remove_member(name, parse_user(user), actor=who.actor, reason=reason)
    forget_cached_reads(request)
    return MemberOut.model_validate(view)


@router.post(
    "/join",
    response_model=JoinedOut,
    tags=["account"],
    summary="Join a hidden leaderboard with an invite code",
    responses={
        401: {"model": ErrorOut, "description": "No token, or an unknown, expired or revoked one"},
        422: {"model": ErrorOut, "description": "The code is unknown, expired, used up or withdrawn"},
        429: {"model": ErrorOut, "description": "Too many codes that let nobody in within the hour"},
    },
)
def join(
    body: JoinIn, who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> JoinedOut:
    return JoinedOut.model_validate(service.join(who.user, body.code))
