"""``/api/v1/admin/…``: the operations of ``/admin`` in Discord, for a token with the ``admin`` scope. Every
change is recorded in the audit log under the acting user and token (``Principal.actor``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Depends, Query, Request

from leaderboards.errors import InvalidChange
from leaderboards.paths import inside
from leaderboards.problems import Problem, load_problem
from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from leaderboards.sync import check_one_problem, sync_problem_set
from web.auth import admin, service_of
from web.routes.common import SubmissionId, TokenId, UserName, parse_user
from web.schemas import (
    API_PREFIX,
    BanIn,
    CreateLeaderboardIn,
    ErrorOut,
    LeaderboardOut,
    LeaderboardUpdateOut,
    ProgramIn,
    QueueStatsOut,
    RateLimitIn,
    StatsOut,
    SyncIn,
    SyncItemOut,
    SyncReportOut,
    TokenOut,
    UpdateLeaderboardIn,
    UsageStatsOut,
    UserOut,
)

router = APIRouter(
    prefix=f"{API_PREFIX}/admin",
    tags=["admin"],
    responses={
        401: {"model": ErrorOut, "description": "No valid token"},
        403: {"model": ErrorOut, "description": "The token lacks the admin scope"},
    },
)


@router.post("/sync", response_model=SyncReportOut, summary="Create/update leaderboards from a problem set")
def sync(
    request: Request, body: SyncIn, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> SyncReportOut:
    """The checks of ``kernelcup problems sync``: devices against the routes, and each new or changed problem's
    reference run first (unless ``skip_run``); the set is applied whole or not at all."""
    state = request.app.state
    target = inside(state.settings.problems_dir, body.path or state.settings.problem_set)
    check = state.reference_check() if state.reference_check is not None and not body.skip_run else None
    report = sync_problem_set(
        service, target, force=body.force, actor=who.actor, check=check, device_check=state.device_check
    )
    forget_cached_reads(request)
    return SyncReportOut(
        items=[SyncItemOut.model_validate(i) for i in report.items],
        applied=report.applied,
        warnings=report.warnings,
        checked=report.checked,
        changes=report.changes,
    )


@router.get("/leaderboards", response_model=list[LeaderboardOut], summary="Every leaderboard, hidden ones too")
def all_leaderboards(
    who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> list[LeaderboardOut]:
    return [LeaderboardOut.model_validate(b) for b in service.list_leaderboards(include_hidden=True)]


@router.post("/leaderboards", response_model=LeaderboardOut, status_code=201, summary="Create a leaderboard")
def create_leaderboard(
    request: Request,
    body: CreateLeaderboardIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> LeaderboardOut:
    problem = load_problem(inside(request.app.state.settings.problems_dir, body.problem))
    _check(request, problem, body.devices, body.skip_run)
    summary = service.create_leaderboard(
        problem,
        name=body.name,
        deadline=_utc(body.deadline),
        devices=body.devices,
        creator=who.actor,
        description=body.description,
        visible=body.visible,
        rate_limit_per_hour=body.rate_limit_per_hour,
        code_public_after_deadline=body.code_public_after_deadline,
    )
    forget_cached_reads(request)
    return LeaderboardOut.model_validate(summary)


@router.patch("/leaderboards/{name}", response_model=LeaderboardUpdateOut, summary="Change a leaderboard")
def update_leaderboard(
    request: Request,
    name: str,
    body: UpdateLeaderboardIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> LeaderboardUpdateOut:
    problem = load_problem(inside(request.app.state.settings.problems_dir, body.problem)) if body.problem else None
    _check(request, problem, body.devices or (), body.skip_run)
    result = service.update_leaderboard(
        name,
        new_name=body.name,
        problem=problem,
        deadline=_utc(body.deadline) if body.deadline else None,
        devices=body.devices,
        description=body.description,
        visible=body.visible,
        code_public_after_deadline=body.code_public_after_deadline,
        force=body.force,
        actor=who.actor,
    )
    forget_cached_reads(request)
    return LeaderboardUpdateOut.model_validate(result)


def _check(request: Request, problem: Problem | None, devices: Sequence[str], skip_run: bool) -> None:
    """What the sync route checks, for one leaderboard: its devices against the runner's routes, and a new problem's
    reference on its own cases (unless ``skip_run``); a 422 naming each issue (a red team opened a board on a device
    no runner serves, with a reference that raised)."""
    state = request.app.state
    check = state.reference_check() if state.reference_check is not None and not skip_run else None
    check_one_problem(problem, devices, check=check, device_check=state.device_check)


@router.delete("/leaderboards/{name}", summary="Delete a leaderboard with all its submissions")
def delete_leaderboard(
    request: Request,
    name: str,
    confirm: str = Query(..., description="The leaderboard's name again."),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> dict[str, str]:
    if confirm != name:
        raise InvalidChange(f"Not deleted: pass confirm={name} to delete {name!r}.", field="confirm")
    service.delete_leaderboard(name, actor=who.actor)
    forget_cached_reads(request)
    return {"deleted": name}


@router.post("/leaderboards/{name}/pause", response_model=LeaderboardOut, summary="Refuse new submissions")
def pause(
    request: Request, name: str, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> LeaderboardOut:
    summary = service.pause(name, actor=who.actor)
    forget_cached_reads(request)
    return LeaderboardOut.model_validate(summary)


@router.post("/leaderboards/{name}/resume", response_model=LeaderboardOut, summary="Accept submissions again")
def resume(
    request: Request, name: str, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> LeaderboardOut:
    summary = service.resume(name, actor=who.actor)
    forget_cached_reads(request)
    return LeaderboardOut.model_validate(summary)


@router.put("/leaderboards/{name}/rate-limit", response_model=LeaderboardOut, summary="Submissions per user per hour")
def rate_limit(
    name: str, body: RateLimitIn, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> LeaderboardOut:
    return LeaderboardOut.model_validate(service.set_rate_limit(name, body.per_hour, actor=who.actor))


@router.put("/users/{user}/ban", response_model=UserOut, summary="Ban a user (discord:ID or a local name)")
def ban(
    request: Request,
    user: UserName,
    body: BanIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> UserOut:
    view = service.ban_user(parse_user(user), reason=body.reason, actor=who.actor)
    forget_cached_reads(request)
    return UserOut.model_validate(view)


@router.delete("/users/{user}/ban", response_model=UserOut, summary="Lift a ban")
def unban(
    request: Request, user: UserName, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> UserOut:
    view = service.unban_user(parse_user(user), actor=who.actor)
    forget_cached_reads(request)
    return UserOut.model_validate(view)


@router.put("/users/{user}/program", response_model=UserOut, summary="Mark an account as a program, or not")
def program(
    request: Request,
    user: UserName,
    body: ProgramIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> UserOut:
    view = service.set_program(parse_user(user), body.program, actor=who.actor)
    forget_cached_reads(request)
    return UserOut.model_validate(view)


@router.delete("/submissions/{submission_id}", summary="Delete a submission (it leaves every ranking)")
def delete_submission(
    request: Request,
    submission_id: SubmissionId,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> dict[str, object]:
    service.delete_submission(submission_id, actor=who.actor)
    forget_cached_reads(request)
    return {"submission_id": submission_id, "action": "deleted"}


@router.get("/stats", response_model=StatsOut, summary="The queue, the workers and usage")
def stats(
    days: int | None = Query(None, ge=1, le=3650, description="Usage of the last N days (default: all time)."),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> StatsOut:
    since = datetime.now(UTC) - timedelta(days=days) if days is not None else None
    return StatsOut(
        queue=QueueStatsOut.model_validate(service.queue_stats()),
        usage=UsageStatsOut.model_validate(service.usage_stats(since)),
    )


@router.get("/tokens", response_model=list[TokenOut], summary="Every token (never the tokens themselves)")
def tokens(
    revoked: bool = Query(False, description="Include revoked tokens."),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> list[TokenOut]:
    return [TokenOut.model_validate(t) for t in service.list_tokens(include_revoked=revoked)]


@router.delete("/tokens/{token_id}", response_model=TokenOut, summary="Revoke any token")
def revoke(
    token_id: TokenId, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> TokenOut:
    return TokenOut.model_validate(service.revoke_token(token_id, actor=who.actor))


def forget_cached_reads(request: Request) -> None:
    """After a change to rankings: the cached ranking pages and the pages' charts go."""
    request.app.state.rankings_cache.clear()
    request.app.state.pages_cache.clear()


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when
