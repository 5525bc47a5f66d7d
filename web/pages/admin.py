"""``/admin`` for a session with the admin scope: pause/resume, rename or move the deadline of a leaderboard (asking
to confirm when it is live), ban/unban, delete a submission, sync the problem set, the queue; the private boards'
invite codes (a new code is in the answer to the form that made it, once) and members; near clones of the open
boards' top entries by other accounts (issue 34). Each action is the
API's admin route function itself (the same service call, audit actor and cache clearing), behind the pages' CSRF
check."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from leaderboards.dates import DATE_EXAMPLE, DATE_HELP, parse_when
from leaderboards.errors import LiveChangeNeedsForce, PermissionDenied, UserError
from leaderboards.invites import MAX_INVITE_DAYS, MAX_INVITE_USES, member_via
from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.base import session_of, sessions_of, sign_in_first, viewer
from web.pages.render import Viewer, render
from web.routes import admin as api_admin
from web.routes import archive as api_archive
from web.routes import invites as api_invites
from web.routes.common import ID_MAX, USER_MAX
from web.schemas import (
    BAN_REASON_MAX,
    RATE_LIMIT_MAX,
    BanIn,
    RateLimitIn,
    StatsOut,
    SyncIn,
    SyncItemOut,
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
    invites = api_invites.list_invites(leaderboard=None, who=who, service=service)
    members = {b.name: api_invites.members(b.name, who=who, service=service) for b in boards if not b.visible}
    clones = api_archive.near_clones(leaderboard=None, top=10, who=who, service=service)
    return render(request, "admin.html", view, status=status, stats=stats, boards=boards, invites=invites,
                  members=members, near_clones=clones, **dates, **context)  # fmt: skip


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
    uses: int = Form(1, ge=1, le=MAX_INVITE_USES),
    days: str = Form("", max_length=20),
    invite_id: int | None = Form(None, ge=1, le=ID_MAX),
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
        "invite_create": lambda: _invite(leaderboard, uses, days, who, service),
        "invite_revoke": lambda: _revoke(invite_id, who, service),
        "member_add": lambda: _member(request, leaderboard, user, reason, True, who, service),
        "member_remove": lambda: _member(request, leaderboard, user, reason, False, who, service),
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
    def said(item: SyncItemOut) -> str:  # what changes, with old and new values where the sync gives them
        details = report.changes.get(item.leaderboard) or item.changed
        return f"{item.leaderboard}: {item.action}" + (f" ({', '.join(details)})" if details else "")

    changes = "; ".join(said(i) for i in report.items) or "nothing to change"
    state = "applied" if report.applied else "NOT applied (an entry needs force)"
    warnings = f" Warnings: {'; '.join(report.warnings)}" if report.warnings else ""
    return f"Sync {state}: {changes}.{warnings}"


def _invite(leaderboard: str, uses: int, days: str, who: Principal, service: LeaderboardService) -> str:
    """A new code, in this answer only (the page never shows it again; only its hash is kept)."""
    try:
        body = api_invites.InviteIn(uses=uses, expires_days=float(days) if days.strip() else None)
    except ValueError:  # not a number, or out of InviteIn's range
        raise UserError(
            f"An invite is valid for a number of days above 0 and up to {MAX_INVITE_DAYS}, or blank for until "
            f"withdrawn; {days.strip()!r} is not.",
            code="invalid_field",
            field="days",
        ) from None
    new = api_invites.create_invite(leaderboard, body, who, service)
    return (f"Invite #{new.invite.invite_id} to {new.invite.leaderboard} made. Its code, shown only now (copy it; "
            f"only its hash is kept): {new.code}")  # fmt: skip


def _revoke(invite_id: int | None, who: Principal, service: LeaderboardService) -> str:
    if invite_id is None:
        raise UserError("Give the number of the invite to withdraw.", code="invalid_field", field="invite_id")
    invite = api_invites.revoke_invite(invite_id, who, service)
    return f"Invite #{invite.invite_id} ({invite.prefix}…) to {invite.leaderboard} is withdrawn; its members stay in."


def _member(
    request: Request, leaderboard: str, user: str, reason: str, add: bool, who: Principal, service: LeaderboardService
) -> str:
    if not user.strip():
        raise UserError("Give the user: discord:ID or a local name.", code="invalid_field", field="user")
    if add:
        body = api_invites.MemberIn(user=user, reason=reason)
        member = api_invites.add_member(request, leaderboard, body, who, service)
        return f"{member.user_name} is in {member.leaderboard} ({member_via(member.invite_id, member.invite_prefix)})."
    member = api_invites.remove_member(request, leaderboard, user, reason, who, service)
    return f"{member.user_name} is out of {member.leaderboard}: it is hidden from them again."
