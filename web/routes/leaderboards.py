"""Public reads: leaderboards, their tasks and templates, rankings and score history. No token needed."""

from __future__ import annotations

import asyncio
import io
import re
import zipfile
from collections.abc import Callable, Hashable
from typing import Literal

from fastapi import APIRouter, Depends, Query, Request, Response

from leaderboards.errors import LeaderboardNotFound, UserError
from leaderboards.results import Principal, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.viewing import HISTORY_MAX_POINTS, HISTORY_MAX_SERIES
from web.auth import MaybeUser, service_of, viewer_of
from web.cache import TTLCache, read_key
from web.routes.common import LIMIT_MAX, OFFSET_MAX
from web.schemas import (
    API_PREFIX,
    HistoryOut,
    LeaderboardDetailOut,
    LeaderboardOut,
    ProblemFolderOut,
    RankingOut,
    TemplateOut,
)

router = APIRouter(prefix=API_PREFIX, tags=["leaderboards"])


@router.get("/leaderboards", response_model=list[LeaderboardOut], summary="Every visible leaderboard")
def list_leaderboards(service: LeaderboardService = Depends(service_of), who: MaybeUser = None) -> list[LeaderboardOut]:
    """With a token: also the hidden leaderboards its user joined with an invite code."""
    return [LeaderboardOut.model_validate(b) for b in service.list_leaderboards(viewer=viewer_of(who))]


@router.get("/leaderboards/{name}", response_model=LeaderboardDetailOut, summary="A leaderboard and its task")
def get_leaderboard(
    name: str, service: LeaderboardService = Depends(service_of), who: MaybeUser = None
) -> LeaderboardDetailOut:
    summary = service.leaderboard(name, viewer=viewer_of(who))
    task = service.task(name, viewer=viewer_of(who))
    return LeaderboardDetailOut(
        **LeaderboardOut.model_validate(summary).model_dump(),
        languages=tuple(sorted(task.templates)),
        template_files=task.template_files,
        tests=task.tests,
        benchmarks=task.benchmarks,
        dtype=task.dtype,
        baselines=task.baselines,
        language=task.language,
    )


@router.get("/leaderboards/{name}/templates/{language}", response_model=TemplateOut, summary="A starter file")
def get_template(
    name: str, language: str, service: LeaderboardService = Depends(service_of), who: MaybeUser = None
) -> TemplateOut:
    return TemplateOut.model_validate(service.template(name, language, viewer=viewer_of(who)))


@router.get(
    "/leaderboards/{name}/problem",
    response_model=ProblemFolderOut,
    summary="The public problem folder",
    responses={200: {"content": {"application/zip": {}}}, 304: {"description": "The If-None-Match copy is current."}},
)
def get_problem_folder(
    request: Request,
    name: str,
    format: Literal["json", "zip"] = Query("json", description="json: a map of files; zip: an archive of the folder."),
    service: LeaderboardService = Depends(service_of),
    who: MaybeUser = None,
) -> Response:
    """What `kernelcup problems get` fetches to run the problem locally with the same harness: task.yml without the
    held-out cases, the reference and the files that travel with a run, the templates. Nothing secret is in it. A
    hidden leaderboard's only for its members."""
    folder = service.public_folder(name, viewer=viewer_of(who))
    etag = f'"{folder.fingerprint}"'
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers={"ETag": etag})
    if format == "json":
        body = ProblemFolderOut.model_validate(folder).model_dump_json().encode()
        return Response(body, media_type="application/json", headers={"ETag": etag})
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for rel, text in sorted(folder.files.items()):
            z.writestr(f"{folder.problem}/{rel}", text)
    disposition = f'attachment; filename="{folder.leaderboard}.zip"'  # (a leaderboard's name is a safe file name)
    return Response(archive.getvalue(), media_type="application/zip",
                    headers={"ETag": etag, "Content-Disposition": disposition})  # fmt: skip


RANKINGS_ROUTE = f"{API_PREFIX}/leaderboards/{{name}}/rankings"
RANKINGS_PATH = re.compile(rf"^{API_PREFIX}/leaderboards/[^/]+/rankings$")


@router.get("/leaderboards/{name}/rankings", response_model=RankingOut, summary="The ranking on one device")
async def get_rankings(
    request: Request,
    name: str,
    device: str | None = Query(None, description="Required when the leaderboard has several devices."),
    limit: int = Query(
        100, ge=1, le=LIMIT_MAX, description="Rows per page (at most KERNELCUP_API_MAX_RANKINGS_LIMIT)."
    ),
    offset: int = Query(0, ge=0, le=OFFSET_MAX, description="Rows to skip (page with it)."),
    programs: bool | None = Query(None, description="Include program accounts (default: the server's setting)."),
    service: LeaderboardService = Depends(service_of),
    who: MaybeUser = None,
) -> Response:
    most = request.app.state.settings.max_rankings_limit
    if limit > most:
        raise UserError(f"limit is at most {most}; page with offset.", code="invalid_field", field="limit")
    # The busiest public read: its JSON is cached (serialised once), answered on the event loop while fresh, else
    # computed through a thread (the service blocks).
    cache = request.app.state.rankings_cache
    key = read_key(request.scope)  # the key CachedReadsMiddleware answers from before routing
    body = cache.fresh(key)
    if body is None:

        def compute(viewer: UserRef | None = None) -> bytes:
            ranking = service.ranking(name, device, limit, offset=offset, programs=programs, viewer=viewer)
            return RankingOut.model_validate(ranking).model_dump_json().encode()

        body = await public_or_members(cache, key, compute, who)
    return Response(body, media_type="application/json")


@router.get("/leaderboards/{name}/history", response_model=HistoryOut, summary="Best score over time")
async def get_history(
    request: Request,
    name: str,
    device: str | None = Query(None, description="Required when the leaderboard has several devices."),
    limit: int = Query(10, ge=1, le=HISTORY_MAX_SERIES, description="Users' series per page, in ranking order."),
    offset: int = Query(0, ge=0, le=OFFSET_MAX),
    points: int = Query(100, ge=2, le=HISTORY_MAX_POINTS, description="The most points in one series."),
    programs: bool | None = Query(None, description="Include program accounts (default: the server's setting)."),
    service: LeaderboardService = Depends(service_of),
    who: MaybeUser = None,
) -> Response:
    """Only the steps where a best improved, a bounded page of series with a bounded number of points each, whatever
    is stored; cached like the rankings (the same answer for KERNELCUP_API_RANKINGS_CACHE_S)."""
    cache = request.app.state.rankings_cache
    key = read_key(request.scope)
    body = cache.fresh(key)
    if body is None:

        def compute(viewer: UserRef | None = None) -> bytes:
            history = service.score_history_page(
                name, device, limit=limit, offset=offset, max_points=points, programs=programs, viewer=viewer
            )
            return HistoryOut.model_validate(history).model_dump_json().encode()

        body = await public_or_members(cache, key, compute, who)
    return Response(body, media_type="application/json")


async def public_or_members(
    cache: TTLCache, key: Hashable, compute: Callable[[UserRef | None], bytes], who: Principal | None
) -> bytes:
    """A public read through the shared cache; a hidden leaderboard's (for a member: ``who`` joined it with an invite
    code) computed for them alone and never cached, so no one else is ever answered from it."""
    try:
        return await asyncio.to_thread(cache.get, key, lambda: compute(None))
    except LeaderboardNotFound:
        if who is None:
            raise
        return await asyncio.to_thread(compute, who.user)
