"""The pages of a competition's end and of private boards (issue 29): ``/leaderboards/{name}/standings`` (live and
final standings per device: shared ranks, 95% intervals, held-out coverage, late entries' notes), ``/leaderboards/
{name}/late`` (the "after the deadline" list) and ``/join`` (a form that takes an invite code).

The same service calls as the API (``web/routes/standings.py``, ``late.py``, ``invites.py``), rendered; nothing here is
cached across viewers, since a hidden board's pages are its members' only. An invite code travels in a POST body only
and is never written back into the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from leaderboards.board_hacks import credits_line
from leaderboards.competition import StandingsView
from leaderboards.errors import NotFound, RateLimited
from leaderboards.formatting import format_ns, format_range
from leaderboards.holdout import held_out_text
from leaderboards.invites import InviteError
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.base import session_of, sessions_of, sign_in_first, viewer
from web.pages.render import Viewer, render

router = APIRouter(include_in_schema=False)

LATE_PAGE_SIZE = 50


@dataclass(frozen=True)
class ShownRow:
    """A standings row as the page prints it."""

    rank: str
    user_name: str
    score: str
    interval: str
    coverage: str
    note: str
    submission_id: int
    file_name: str


def shown_rows(view: StandingsView) -> list[ShownRow]:
    return [
        ShownRow(
            rank=f"{r.rank}=" if r.tied else str(r.rank),
            user_name=r.user_name,
            score=format_ns(r.score_ns),
            interval=format_range(r.low_ns, r.high_ns) if r.low_ns and r.high_ns else "",
            coverage=held_out_text(r.coverage, r.holdout_ns),
            note=r.note or "",
            submission_id=r.submission_id,
            file_name=r.file_name,
        )
        for r in view.rows
    ]


def _device(devices: tuple[str, ...], device: str | None) -> str:
    return next((d for d in devices if device and d.lower() == device.lower()), devices[0])


@router.get("/leaderboards/{name}/standings")
def standings_page(
    request: Request,
    name: str,
    device: str | None = Query(None, max_length=32),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    me = view.who.user if view.who is not None else None
    board = service.leaderboard(name, viewer=me)
    chosen = _device(board.devices, device)
    live = service.standings(name, chosen, viewer=me)
    try:
        final: StandingsView | None = service.standings(name, chosen, final=True, viewer=me)
    except NotFound:  # not frozen yet
        final = None
    return render(
        request,
        "standings.html",
        view,
        board=board,
        device=chosen,
        live=shown_rows(live),
        final=final,
        final_rows=shown_rows(final) if final is not None else [],
        hacks=credits_line(service.hack_credits(name, viewer=me)),  # issue 35: "hacks: alice broke 2 entries"
    )


@router.get("/leaderboards/{name}/late")
def late_page(
    request: Request,
    name: str,
    page: int = Query(1, ge=1, le=100_000),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    me = view.who.user if view.who is not None else None
    late = service.late_submissions(name, viewer=me, limit=LATE_PAGE_SIZE, offset=(page - 1) * LATE_PAGE_SIZE)
    return render(
        request,
        "late.html",
        view,
        late=late,
        page=page,
        pages=max(1, math.ceil(late.total / LATE_PAGE_SIZE)),
    )


@router.get("/join")
def join_page(request: Request, view: Viewer = Depends(viewer)) -> Response:
    if view.who is None:
        return sign_in_first(request)
    return render(request, "join.html", view)


@router.post("/join")
def join(
    request: Request,
    code: str = Form("", max_length=200),
    csrf: str = Form(""),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    sessions_of(request).check_csrf(request, session_of(request), csrf)
    if view.who is None:
        return sign_in_first(request)
    try:
        joined = service.join(view.who.user, code)
    except InviteError as exc:
        return render(request, "join.html", view, status=422, error=exc.message)
    except RateLimited as exc:
        return render(request, "join.html", view, status=429, error=exc.message)
    return RedirectResponse(f"/leaderboards/{joined.leaderboard}", status_code=303)
