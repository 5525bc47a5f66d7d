"""``/admin`` for a session with the admin scope: pause/resume, rename or move the deadline of a leaderboard (asking
to confirm when it is live), ban/unban, delete a submission, sync the problem set, the queue. Each action is the
API's admin route function itself (the same service call, audit actor and cache clearing), behind the pages' CSRF
check."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from leaderboards.dates import DATE_EXAMPLE, DATE_HELP, parse_when
from leaderboards.errors import LiveChangeNeedsForce, PermissionDenied, UserError
from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.base import session_of, sessions_of, sign_in_first, viewer
from web.pages.render import Viewer, render
from web.routes import admin as api_admin
from web.routes.common import ID_MAX, USER_MAX
from web.schemas import (
    BAN_REASON_MAX,
    RATE_LIMIT_MAX,
    BanIn,
    RateLimitIn,
    StatsOut,
    SyncIn,
    SyncReportOut,
    UpdateLeaderboardIn,
)

router = APIRouter(include_in_schema=False)


def _admin(view: Viewer) -> Principal:
    if view.who is None or not view.who.is_admin:
        raise PermissionDenied("This page is for admins: sign in with a token that has the admin scope.")
    return view.who


def _page(
    request: Request, view: Viewer, service: LeaderboardService, status: int = 200, **context: object
) -> Response:
    who = _admin(view)
    stats: StatsOut = api_admin.stats(days=None, who=who, service=service)
    boards = api_admin.all_leaderboards(who=who, service=service)
    dates = {"date_help": DATE_HELP, "date_example": DATE_EXAMPLE}
    return render(request, "admin.html", view, status=status, stats=stats, boards=boards, **dates, **context)


@router.get("/admin")
def admin_page(
    request: Request, view: Viewer = Depends(viewer), service: LeaderboardService = Depends(service_of)
) -> Response:
    if view.who is None:
        return sign_in_first(request)
    return _page(request, view, service)


@router.post("/admin")
def admin_action(
    request: Request,
    action: str = Form(...),
    leaderboard: str = Form(""),
    user: str = Form("", max_length=USER_MAX),
    reason: str = Form("", max_length=BAN_REASON_MAX),
    submission_id: int | None = Form(None, ge=1, le=ID_MAX),
    force: bool = Form(False),
    new_name: str = Form("", max_length=200),
    deadline: str = Form("", max_length=100),
    per_hour: str = Form("", max_length=20),
    csrf: str = Form(""),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    sessions_of(request).check_csrf(request, session_of(request), csrf)
    who = _admin(view)
    actions: dict[str, Callable[[], str]] = {
        "pause": lambda: f"{api_admin.pause(request, leaderboard, who, service).name} is paused.",
        "resume": lambda: f"{api_admin.resume(request, leaderboard, who, service).name} accepts submissions again.",
        "ban": lambda: f"{api_admin.ban(request, user, BanIn(reason=reason), who, service).name} is banned.",
        "unban": lambda: f"{api_admin.unban(request, user, who, service).name} is no longer banned.",
        "delete": lambda: _delete(request, submission_id, who, service),
        "sync": lambda: _sync(request, force, who, service),
        "update": lambda: _update(request, leaderboard, new_name, deadline, force, who, service),
        "hide": lambda: _visibility(request, leaderboard, False, who, service),
        "show": lambda: _visibility(request, leaderboard, True, who, service),
        "rate_limit": lambda: _rate_limit(leaderboard, per_hour, who, service),
    }
    if action not in actions:
        raise UserError(f"Unknown action {action!r}; use the page's buttons.", code="invalid_field", field="action")
    try:
        message = actions[action]()
    except LiveChangeNeedsForce as exc:  # asks to confirm: the same change again, forced
        confirm = {"leaderboard": leaderboard, "new_name": new_name, "deadline": deadline}
        return _page(request, view, service, status=409, error=exc.message, confirm=confirm)
    except UserError as exc:
        return _page(request, view, service, status=422, error=exc.message)
    return _page(request, view, service, message=message)


def _update(
    request: Request,
    leaderboard: str,
    new_name: str,
    deadline: str,
    force: bool,
    who: Principal,
    service: LeaderboardService,
) -> str:
    """Rename a leaderboard or move its deadline (UTC); on a live one the first try asks to confirm (the page shows
    what it affects and a Confirm button that sends it again with force)."""
    when = parse_when(deadline) if deadline.strip() else None
    body = UpdateLeaderboardIn(name=new_name.strip() or None, deadline=when, force=force)
    result = api_admin.update_leaderboard(request, leaderboard, body, who, service)
    if not result.changed:
        return f"{leaderboard}: nothing to change."
    return f"{result.leaderboard.name} updated: {', '.join(result.changed)}."


def _visibility(request: Request, leaderboard: str, visible: bool, who: Principal, service: LeaderboardService) -> str:
    body = UpdateLeaderboardIn(visible=visible)
    name = api_admin.update_leaderboard(request, leaderboard, body, who, service).leaderboard.name
    return f"{name} is shown to everyone." if visible else f"{name} is hidden: admins and invited members see it."


def _rate_limit(leaderboard: str, per_hour: str, who: Principal, service: LeaderboardService) -> str:
    """Submissions per user per hour on a leaderboard; blank: back to the server's defaults."""
    try:
        body = RateLimitIn(per_hour=int(per_hour) if per_hour.strip() else None)
    except ValueError:  # not a number, or out of RateLimitIn's range (pydantic's ValidationError is a ValueError)
        raise UserError(
            f"A rate limit is a number of submissions per hour from 1 to {RATE_LIMIT_MAX}, or blank for the "
            f"server's default; {per_hour.strip()!r} is not.",
            code="invalid_field",
            field="per_hour",
        ) from None
    board = api_admin.rate_limit(leaderboard, body, who, service)
    limit = f"{board.rate_limit_per_hour} per hour" if board.rate_limit_per_hour else "the server's default"
    return f"{board.name}: rate limit {limit}."


def _delete(request: Request, submission_id: int | None, who: Principal, service: LeaderboardService) -> str:
    if submission_id is None:
        raise UserError("Give the id of the submission to delete.", code="invalid_field", field="submission_id")
    api_admin.delete_submission(request, submission_id, who, service)
    return f"Submission {submission_id} is deleted (it left every ranking)."


def _sync(request: Request, force: bool, who: Principal, service: LeaderboardService) -> str:
    report: SyncReportOut = api_admin.sync(request, SyncIn(force=force), who, service)
    changes = "; ".join(f"{i.leaderboard}: {i.action}" for i in report.items) or "nothing to change"
    state = "applied" if report.applied else "NOT applied (an entry needs force)"
    warnings = f" Warnings: {'; '.join(report.warnings)}" if report.warnings else ""
    return f"Sync {state}: {changes}.{warnings}"
