"""``/admin/moderation`` for a session with the admin scope (issue 29): the audit log (filtered, paged), moderated
entries with a form to flag, quarantine, judge hacked or clear one, a leaderboard's rejudges with a form to queue
them, and open alerts. Each action is the API's route function itself (``web/routes/moderation.py``: the same
service call, audit actor and cache clearing), behind the pages' CSRF check."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response

from leaderboards.dates import DATE_EXAMPLE, DATE_HELP, InvalidDate, parse_when
from leaderboards.errors import UserError
from leaderboards.moderation import MAX_REASON, ModerationState, parse_state
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.admin import _admin
from web.pages.base import session_of, sessions_of, sign_in_first, viewer
from web.pages.render import Viewer, render
from web.routes import moderation as api
from web.routes.common import ID_MAX

router = APIRouter(include_in_schema=False)


def _page(
    request: Request,
    view: Viewer,
    service: LeaderboardService,
    *,
    status: int = 200,
    filters: dict[str, str] | None = None,
    before: int | None = None,
    **context: object,
) -> Response:
    who = _admin(view)
    f = filters or {}
    since = None
    if f.get("since"):
        try:
            since = parse_when(f["since"], field="since")
        except InvalidDate as exc:
            context["error"] = exc.message
    page = api.audit(actor=f.get("actor") or None, action=f.get("action") or None,
                     leaderboard=f.get("leaderboard") or None, since=since, before=before, limit=50, who=who,
                     service=service)  # fmt: skip
    board = f.get("leaderboard") or ""
    rejudges = api.rejudges(board, device=None, limit=50, who=who, service=service) if board else []
    return render(
        request, "moderation.html", view, status=status, audit=page, filters=f, states=list(ModerationState),
        moderated=api.moderated(state=None, leaderboard=None, limit=100, who=who, service=service),
        rejudges=rejudges, alerts=api.alerts(include_resolved=False, who=who, service=service), date_help=DATE_HELP,
        date_example=DATE_EXAMPLE, **context,
    )  # fmt: skip


@router.get("/admin/moderation")
def moderation_page(
    request: Request,
    actor: str = Query("", max_length=200),
    action: str = Query("", max_length=64),
    leaderboard: str = Query("", max_length=100),
    since: str = Query("", max_length=40),
    before: int | None = Query(None, ge=1, le=ID_MAX),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    if view.who is None:
        return sign_in_first(request)
    filters = {"actor": actor, "action": action, "leaderboard": leaderboard, "since": since}
    try:
        return _page(request, view, service, filters=filters, before=before)
    except UserError as exc:  # an unknown leaderboard in the filter
        return _page(request, view, service, status=422, error=exc.message)


@router.post("/admin/moderation")
def moderation_action(
    request: Request,
    action: str = Form(...),
    submission_id: int | None = Form(None, ge=1, le=ID_MAX),
    state: str = Form("", max_length=16),
    reason: str = Form("", max_length=MAX_REASON),
    leaderboard: str = Form("", max_length=100),
    top: int = Form(10, ge=1, le=1000),
    alert_id: int | None = Form(None, ge=1, le=ID_MAX),
    csrf: str = Form(""),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    sessions_of(request).check_csrf(request, session_of(request), csrf)
    who = _admin(view)
    try:
        if action == "moderate" and submission_id is not None:
            if not reason.strip():
                raise UserError("Say why (the author reads it).", code="invalid_field", field="reason")
            body = api.ModerateIn(state=parse_state(state), reason=reason)
            done = api.moderate(request, submission_id, body, who, service)
            message = f"Submission {done.submission_id} of {done.user_name} is now {done.state}."
        elif action == "rejudge" and leaderboard:
            queued = api.rejudge(leaderboard, api.RejudgeIn(top=top), who, service)
            message = f"{leaderboard}: queued {len(queued)} rejudges below everyone's submissions."
        elif action == "resolve" and alert_id is not None and reason:
            api.resolve(alert_id, api.ResolveIn(reason=reason), who, service)
            message = f"Alert {alert_id} is resolved."
        else:
            raise UserError("Fill in the form's fields; use the page's buttons.", code="invalid_field", field="action")
    except UserError as exc:
        return _page(request, view, service, status=422, error=exc.message)
    return _page(request, view, service, message=message, filters={"leaderboard": leaderboard})
