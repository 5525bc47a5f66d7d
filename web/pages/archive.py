"""The archive's pages (issue 34): ``/archive`` (published kernels, browsed by problem and device, newest or fastest
first) and ``/archive/{submission_id}/{device}`` (one kernel: its code highlighted, its licence and author, and the
public run's timings per case). The same service calls as ``GET /api/v1/archive``; only published entries exist."""

from __future__ import annotations

import math

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from leaderboards.archive import SORTS, ArchiveFilter, ArchivePage
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.base import viewer
from web.pages.render import Viewer, cached_page, highlight
from web.routes.archive import NAME_MAX
from web.routes.common import SubmissionId

router = APIRouter(include_in_schema=False)

ARCHIVE_PAGE_SIZE = 50


@router.get("/archive")
def archive_page(
    request: Request,
    problem: str = Query("", max_length=NAME_MAX),
    device: str = Query("", max_length=NAME_MAX),
    sort: str = Query("newest", pattern="^(" + "|".join(SORTS) + ")$"),
    page: int = Query(1, ge=1, le=100_000),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    f = ArchiveFilter(problem=problem or None, device=device or None, sort=sort)
    found = service.archive(f, limit=ARCHIVE_PAGE_SIZE, offset=(page - 1) * ARCHIVE_PAGE_SIZE)
    problems, devices = service.archive_choices()
    return cached_page(
        request,
        "archive.html",
        view,
        found=found,
        problems=problems,
        devices=devices,
        problem=problem,
        device=device,
        sort=sort,
        page=page,
        pages=max(1, math.ceil(found.total / ARCHIVE_PAGE_SIZE), page + more_than_counted(found)),
    )


def more_than_counted(found: ArchivePage) -> int:
    """1 where the count stopped (``ARCHIVE_COUNT_MAX``) and this page is full: there is a next page to link."""
    return int(not found.total_exact and len(found.entries) == ARCHIVE_PAGE_SIZE)


@router.get("/archive/{submission_id}/{device}")
def archive_entry_page(
    request: Request,
    submission_id: SubmissionId,
    device: str,
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    entry = service.archive_entry(submission_id, device[:NAME_MAX])
    return cached_page(request, "archive_entry.html", view, e=entry, highlighted=highlight(entry.code, entry.file_name))
