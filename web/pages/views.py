"""The pages that only read: ``/``, ``/leaderboards/{name}``, a template download, ``/submissions/{id}``, ``/me``.

Each is the API's service calls and typed answers (``web/schemas.py``) rendered through a template; none needs
JavaScript (a submission still running refreshes itself through a ``<noscript>`` meta refresh, or its event
stream where scripts run).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from leaderboards.board_hacks import credits_line
from leaderboards.errors import LeaderboardNotFound, NotFound, SubmissionNotFound, UserError
from leaderboards.events import ProgressUpdate
from leaderboards.licences import CHOICES as LICENCE_CHOICES
from leaderboards.results import RankingEntry
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.base import session_of, sign_in_first, viewer
from web.pages.chart import score_chart
from web.pages.render import Viewer, cached_page, highlight, render
from web.routes import leaderboards as api_leaderboards
from web.routes.common import ID_MAX, SubmissionId, ncu_report_response, submission_out
from web.routes.events import event_stream, resume_after
from web.schemas import CodeOut, LeaderboardOut, RankingOut, SubmissionSummaryOut

router = APIRouter(include_in_schema=False)

CHART_TTL_S = 60.0
"""Longest a leaderboard page reuses its task and settings, and its chart while its ranking's head and size stay the
same (a deleted or banned entry that was a record once, but not the best now, changes the line without changing
them). Admin changes forget them at once."""


@dataclass(frozen=True)
class DeviceLine:
    """One device of a problem on the front page: how many are ranked, who leads, and the viewer's own best."""

    device: str
    entries: int
    leader: RankingEntry | None
    mine: RankingEntry | None


@dataclass(frozen=True)
class ProblemRow:
    board: LeaderboardOut
    devices: tuple[DeviceLine, ...]

    @property
    def ranked(self) -> bool:
        return any(d.entries for d in self.devices)


def problem_row(service: LeaderboardService, board: LeaderboardOut, user_id: int | None) -> ProblemRow:
    """The whole ranking is read only for a signed-in viewer, to find their entry in it; anyone else's needs the
    leader and the count alone."""
    lines = []
    for device in board.devices:
        ranking = service.ranking(board.name, device, None if user_id is not None else 1)
        mine = next((e for e in ranking.entries if e.user_id == user_id), None) if user_id is not None else None
        lines.append(DeviceLine(device, ranking.total, next(iter(ranking.entries), None), mine))
    return ProblemRow(board, tuple(lines))


@router.get("/")
def home(
    request: Request, view: Viewer = Depends(viewer), service: LeaderboardService = Depends(service_of)
) -> Response:
    """The problems as a table to scan: name, deadline, each device's leader and entries, the viewer's best. The
    open problems nobody is ranked on yet and the closed ones are folded away below, each a line."""
    user_id = view.who.user_id if view.who is not None else None
    rows = [problem_row(service, b, user_id) for b in api_leaderboards.list_leaderboards(service)]
    open_rows = [r for r in rows if r.board.is_open]
    return cached_page(
        request,
        "home.html",
        view,
        ranked=[r for r in open_rows if r.ranked],
        unranked=[r for r in open_rows if not r.ranked],
        closed=[r for r in rows if not r.board.is_open],
    )


@router.get("/leaderboards/{name}")
def leaderboard_page(
    request: Request,
    name: str,
    device: str | None = Query(None),
    page: int = Query(1, ge=1, le=100_000),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    cache = request.app.state.pages_cache
    # The task and the leaderboard's settings change through admin actions (which forget this) or at the deadline:
    # remembered for CHART_TTL_S at most, the submission count with them.
    me = None  # a public board: read as anyone, shared through the cache
    try:
        board = cache.get(("board", name), lambda: api_leaderboards.get_leaderboard(name, service))
    except LeaderboardNotFound:
        if view.who is None:
            raise
        me, who = view.who.user, view.who  # a hidden board they joined with an invite code: read as them, cached
        board = cache.get(("board", name, me.identity), lambda: api_leaderboards.get_leaderboard(name, service, who))
    scope = (name,) if me is None else (name, me.identity)
    chosen = next((d for d in board.devices if device and d.lower() == device.lower()), board.devices[0])
    size = request.app.state.settings.ranking_page_size
    ranking = RankingOut.model_validate(service.ranking(name, chosen, size, offset=(page - 1) * size, viewer=me))
    head = (
        ranking.entries[0]
        if page == 1 and ranking.entries
        else next(iter(service.ranking(name, chosen, 1, viewer=me).entries), None)
    )
    # What the whole history gives (the chart; the roofline score behind the speed-of-light share, from the best
    # entry's run) changes when the ranking's head or size does: remembered under those, and for CHART_TTL_S at most.
    version = (*scope, chosen, ranking.total, head and head.submission_id, head and head.score_ns)
    bound = cache.get(("roofline", *version), lambda: service.roofline_score_ns(name, chosen, viewer=me))
    chart = cache.get(
        ("chart", *version), lambda: score_chart(service.score_history(name, chosen, viewer=me), datetime.now(UTC))
    )
    shares = {e.submission_id: bound / e.score_ns if bound and e.score_ns > 0 else None for e in ranking.entries}
    return cached_page(
        request,
        "leaderboard.html",
        view,
        board=board,
        device=chosen,
        ranking=ranking,
        shares=shares,
        page=page,
        pages=max(1, math.ceil(ranking.total / size)),
        chart=chart,
        code_links=not board.is_open and board.code_public_after_deadline,
        hacks=credits_line(service.hack_credits(name, viewer=me)),  # issue 35: "hacks: alice broke 2 entries"
    )


@router.get("/leaderboards/{name}/templates/{language}")
def template_download(
    name: str, language: str, view: Viewer = Depends(viewer), service: LeaderboardService = Depends(service_of)
) -> Response:
    template = api_leaderboards.get_template(name, language, service, view.who)  # a member's hidden board too
    return Response(
        template.content,
        media_type="text/plain; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{_safe_file_name(template.file_name)}"'},
    )


@router.get("/leaderboards/{name}/problem.zip")
def problem_folder_download(
    request: Request, name: str, view: Viewer = Depends(viewer), service: LeaderboardService = Depends(service_of)
) -> Response:
    """The leaderboard page's problem folder link: the API's zip, read as the signed-in viewer (a member's hidden
    board too)."""
    return api_leaderboards.get_problem_folder(request, name, "zip", service, view.who)


def _safe_file_name(name: str) -> str:
    return "".join(c for c in name if c.isalnum() or c in "._-") or "template.txt"


@router.get("/submissions/{submission_id}")
def submission_page(
    request: Request,
    submission_id: SubmissionId,
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    """Its owner (or an admin) sees everything public; anyone else only the code of a ranked entry whose problem
    set made it public after the deadline; else 404, as for a missing submission."""
    who = view.who
    if who is not None:
        try:
            details = service.submission_details(submission_id, who.user, admin=who.is_admin)
        except SubmissionNotFound:
            pass
        else:
            out = submission_out(request, details)
            second = None
            if out.status.mode == "compare":
                b = service.submission_code(submission_id, who.user, admin=who.is_admin, second=True)
                second = {"file_name": b.file_name, "sha256": b.code_sha256, "code": highlight(b.code, b.file_name)}
            # The progress so far, as the event stream would send it, and where the stream resumes: after the
            # last event shown (the page's stream had started from the beginning and showed each event twice).
            progress: tuple[ProgressUpdate, ...] = ()
            follower = service.follower(submission_id)
            if not out.status.done:
                progress = tuple(u for u in follower.poll().updates if u.event_id is not None)
            licence = None  # the archive licence, for its author (who may change it or withdraw the kernel)
            if out.status.mode != "compare":
                with contextlib.suppress(UserError):
                    licence = service.submission_licence(submission_id, who.user)
            return render(
                request,
                "submission.html",
                view,
                sub=out,
                licence=licence,
                licence_choices=LICENCE_CHOICES,
                licence_said=request.query_params.get("licence", ""),
                progress=progress,
                events_after=follower.after_id,
                code=highlight(details.code, out.status.file_name),
                code_b=second,
                results={r.device: r for r in out.results},
                duplicate=request.query_params.get("duplicate") == "1",
            )
    reader = who.user if who is not None else None  # a hidden board's public code: for its members only
    code = CodeOut.model_validate(service.submission_code(submission_id, reader))  # public, or SubmissionNotFound
    return render(request, "code.html", view, code=code, highlighted=highlight(code.code, code.file_name))


@router.get("/submissions/{submission_id}/profile/{device}.ncu-rep")
def submission_ncu_report(
    submission_id: SubmissionId,
    device: str,
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    """The API's report download for a signed-in page (a link sends the cookie, not a bearer token)."""
    if view.who is None:
        raise SubmissionNotFound(submission_id, mine=True)
    details = service.submission_details(submission_id, view.who.user, admin=view.who.is_admin)
    return ncu_report_response(details, device)


@router.get("/submissions/{submission_id}/events")
def submission_events(
    request: Request,
    submission_id: SubmissionId,
    after: int = Query(0, ge=0, le=ID_MAX),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    """The API's event stream for a signed-in page (EventSource sends the cookie, not a bearer token)."""
    if view.who is None:
        raise SubmissionNotFound(submission_id, mine=True)
    resume = resume_after(request.headers.get("last-event-id"), after)
    session = session_of(request)
    assert session is not None  # view.who came from it
    return event_stream(
        request, submission_id, view.who, service, resume, partial(service.session_principal, session.sid)
    )


@router.get("/me")
def my_page(
    request: Request,
    leaderboard: str | None = Query(None),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    if view.who is None:
        return sign_in_first(request)
    boards = [b.name for b in service.list_leaderboards(viewer=view.who.user)]
    chosen = leaderboard if leaderboard in boards else None
    if leaderboard and chosen is None:
        raise NotFound(f"There is no leaderboard {leaderboard!r}; choose one from the list.")
    subs = [SubmissionSummaryOut.model_validate(s) for s in service.user_submissions(view.who.user, chosen, limit=200)]
    return render(request, "me.html", view, subs=subs, boards=boards, chosen=chosen)
