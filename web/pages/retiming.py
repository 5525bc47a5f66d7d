"""``/admin/retiming`` for a session with the admin scope (issue 29): a form that queues the re-timing of a board's
finalists (each device's top K, R interleaved rounds spread over the live workers serving the device: the same call
and bounds as ``POST /api/v1/admin/leaderboards/{name}/retime``, ``kernelcup leaderboard retime`` and ``/admin
retime``), and the latest re-timing of each device of a board as the CLI's ``retiming`` prints it: each entry's pooled
score, its 95% interval, shared ranks ("2="), each machine's figure, and the rounds queued, running, done and failed.

Behind the pages' CSRF check, admins only (``web.pages.admin._admin``). A re-timing shows benchmark timings and user
names only: never a case of the problem, held-out or not."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response

from leaderboards.errors import NotFound, UserError
from leaderboards.formatting import format_ns, format_range
from leaderboards.results import Principal
from leaderboards.retiming import DEFAULT_RETIME_ROUNDS, MAX_RETIME_ROUNDS, RetimingView
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.admin import _admin
from web.pages.base import session_of, sessions_of, sign_in_first, viewer
from web.pages.render import Viewer, render
from web.routes import admin as api_admin

router = APIRouter(include_in_schema=False)

TOP_MAX = 1000
"""The API's bound on ``top`` (``RetimeIn``); the service checks it again."""
DEVICE_MAX = 32


@dataclass(frozen=True)
class ShownRetimedRow:
    """A re-timed entry as the page prints it (the CLI's ``retiming_table`` columns)."""

    rank: str
    user_name: str
    score: str
    interval: str
    rounds: int
    machines: tuple[str, ...]
    submission_id: int


@dataclass(frozen=True)
class ShownRetiming:
    """The latest re-timing of one device, in words."""

    title: str
    progress: str
    rows: tuple[ShownRetimedRow, ...]
    notes: tuple[str, ...]


def shown_retiming(view: RetimingView) -> ShownRetiming:
    """What ``kernelcup leaderboard retiming`` and ``/admin retiming`` say of ``view``, as the page's parts."""
    machines = f"{view.machines} machine{'s' if view.machines != 1 else ''}"
    rows = tuple(
        ShownRetimedRow(
            rank=f"{r.rank}=" if r.tied else str(r.rank),
            user_name=r.user_name,
            score=format_ns(r.score_ns),
            interval=format_range(r.low_ns, r.high_ns),
            rounds=r.rounds,
            machines=tuple(f"{m.machine}: {format_ns(m.score_ns)} ({m.rounds})" for m in r.machines),
            submission_id=r.submission_id,
        )
        for r in view.rows
    )
    notes = ["'=' marks entries the paired compare cannot tell apart (95%)"]
    if view.done < 2:
        notes.append("fewer than two rounds have run: nothing to rank yet")
    notes += [f"#{sid}: a run failed in some round (not ranked here)" for sid in view.failed]
    return ShownRetiming(
        title=f"{view.leaderboard} on {view.device}: re-timed, {view.done} of {view.rounds} rounds on {machines}",
        progress=f"rounds: {view.queued} queued, {view.running} running, {view.done} done, {view.rounds_failed} failed",
        rows=rows,
        notes=tuple(notes),
    )


def _views(service: LeaderboardService, board: str, devices: list[str]) -> tuple[list[ShownRetiming], list[str]]:
    """The latest re-timing of each of ``devices`` of ``board``, and a line for each device never re-timed."""
    shown, never = [], []
    for device in devices:
        try:
            shown.append(shown_retiming(service.retiming(board, device)))
        except NotFound:
            never.append(f"{board} has not been re-timed on {device}.")
    return shown, never


def _page(
    request: Request,
    view: Viewer,
    service: LeaderboardService,
    *,
    board: str = "",
    device: str = "",
    status: int = 200,
    **context: object,
) -> Response:
    who = _admin(view)
    boards = api_admin.all_leaderboards(who=who, service=service)
    retimings: list[ShownRetiming] = []
    never: list[str] = []
    chosen = next((b for b in boards if b.name == board), None)
    if board and chosen is None:
        context.setdefault("error", f"No leaderboard named {board!r}: pick one of the list.")
        status = max(status, 404)
    elif chosen is not None:
        wanted = [d for d in chosen.devices if not device or d.lower() == device.lower()]
        if device and not wanted:
            context.setdefault("error", f"{chosen.name} does not run on {device!r}: its devices are "
                                        f"{', '.join(chosen.devices)}.")  # fmt: skip
            status = max(status, 422)
        retimings, never = _views(service, chosen.name, wanted)
    return render(request, "retiming.html", view, status=status, boards=boards, board=board, device=device,
                  retimings=retimings, never=never, top_max=TOP_MAX, rounds_max=MAX_RETIME_ROUNDS,
                  rounds_default=DEFAULT_RETIME_ROUNDS, **context)  # fmt: skip


@router.get("/admin/retiming")
def retiming_page(
    request: Request,
    leaderboard: str = Query("", max_length=100),
    device: str = Query("", max_length=DEVICE_MAX),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    if view.who is None:
        return sign_in_first(request)
    return _page(request, view, service, board=leaderboard, device=device)


@router.post("/admin/retiming")
def retime(
    request: Request,
    leaderboard: str = Form(..., max_length=100),
    device: str = Form("", max_length=DEVICE_MAX),
    top: int = Form(10, ge=2, le=TOP_MAX),
    rounds: int = Form(DEFAULT_RETIME_ROUNDS, ge=2, le=MAX_RETIME_ROUNDS),
    csrf: str = Form(""),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    sessions_of(request).check_csrf(request, session_of(request), csrf)
    who = _admin(view)
    try:
        message = _queue(service, who, leaderboard, device.strip(), top, rounds)
    except UserError as exc:
        return _page(request, view, service, board=leaderboard, device=device, status=422, error=exc.message)
    return _page(request, view, service, board=leaderboard, device=device.strip(), message=message)


def _queue(service: LeaderboardService, who: Principal, board: str, device: str, top: int, rounds: int) -> str:
    """The API's call (``queue_retiming`` with the admin's audit actor), and what was queued in words."""
    queued = service.queue_retiming(board, actor=who.actor, top=top, rounds=rounds, device=device or None)
    if not queued:
        return f"{board}: nothing to re-time (no device has two ranked entries)."
    lines = []
    for q in queued:
        where = ", ".join(q.workers) or "whichever worker comes (none is alive now)"
        lines.append(f"{q.leaderboard} on {q.device}: queued {q.rounds} interleaved rounds of {len(q.entries)} "
                     f"entries, spread over {where}.")  # fmt: skip
    return " ".join(lines)
