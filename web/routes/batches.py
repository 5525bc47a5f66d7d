"""Batches and reward records for programs (issue 33, ``leaderboards/batches.py``, ``leaderboards/reward.py``).

- ``POST /api/v1/batches``: up to ``KERNELCUP_BATCH_MAX_CANDIDATES`` files (repeated ``files`` fields) for one
  leaderboard, device and mode, answered at once (202) with the batch and its id.
- ``GET /api/v1/batches/{id}``: every candidate's state and, once finished, its reward record.
- ``GET /api/v1/batches/{id}/events``: Server-Sent Events, one ``candidate`` event per candidate as it finishes (data:
  ``BatchItemOut``, ``id:`` its position), then ``done`` (data: ``BatchOut``). A client that reconnects gets every
  finished candidate again (they are few; keep the positions you have).
- ``GET /api/v1/submissions/{id}/reward``: a submission's reward record per device.
- ``POST /api/v1/submissions/{id}/replay``: time a stored run again with its own seeds (``leaderboards/replay.py``);
  ``GET /api/v1/submissions/{id}/replay`` (the replay's id): its verdicts and medians beside the original's.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Path, Request, UploadFile
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials

from leaderboards.batches import BatchView
from leaderboards.db import is_unavailable
from leaderboards.errors import KernelcupError
from leaderboards.results import Principal, Scope
from leaderboards.service import LeaderboardService
from web.auth import CredentialsFirst, bearer, service_of, submitter
from web.errors import UNAVAILABLE
from web.routes.common import ID_MAX, SubmissionId, base_url
from web.routes.events import RETRY_MS, _SlotStream, sse
from web.routes.idempotency import IDEMPOTENCY_RESPONSES, Once, idempotency_key
from web.routes.submissions import receipt_response
from web.schemas import (
    API_PREFIX,
    BatchItemOut,
    BatchLinks,
    BatchOut,
    ErrorOut,
    ReplayReportOut,
    SubmissionReceiptOut,
    SubmissionRewardsOut,
)

router = APIRouter(prefix=API_PREFIX, tags=["programs"])
log = logging.getLogger(__name__)

BatchId = Path(ge=1, le=ID_MAX, description="The batch's id.")
ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No token, or an unknown, expired or revoked one"},
    404: {"model": ErrorOut, "description": "No such batch or submission of yours"},
}


def batch_out(request: Request, view: BatchView) -> BatchOut:
    here = f"{base_url(request)}{API_PREFIX}/batches/{view.batch_id}"
    data = {name: getattr(view, name) for name in ("batch_id", "leaderboard", "device", "mode", "user_name")}
    return BatchOut(
        **data,
        created_at=view.created_at,
        items=tuple(BatchItemOut.model_validate(i) for i in view.items),
        finished=view.finished,
        done=view.done,
        links=BatchLinks(self=here, events=f"{here}/events"),
    )


async def submit_batch(
    request: Request,
    files: list[UploadFile] = File(..., description="The candidates: one `files` field per file, in order."),
    leaderboard: str = Form(..., max_length=100, description="The leaderboard every candidate is for."),
    device: str | None = Form(None, max_length=32, description="One device; default: the leaderboard's only one."),
    mode: str = Form("benchmark", max_length=16, description="test, benchmark, ranked or profile."),
    force: bool = Form(False, description="Run candidates sent a moment ago again (else: that earlier submission)."),
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
    key: str | None = Depends(idempotency_key),
    service: LeaderboardService = Depends(service_of),
) -> JSONResponse:
    """Stores every candidate at once, one job each, and answers with the batch (202): each candidate's submission,
    or the error that refused it alone (a wrong file type, an empty file). What concerns the whole batch (the
    leaderboard, the device, the mode, the hourly limit counted by the batch's size, the pending-job quota, your GPU
    budget) refuses it as a whole, and nothing is stored. Follow it with `links.events` or `links.self`."""
    once = Once(service, key, "POST /batches")

    def accept() -> JSONResponse:
        who = service.authenticate(credentials.credentials if credentials else None, Scope.SUBMIT)
        limit = service.settings.max_submission_bytes
        read = []
        for upload in files:
            name = upload.filename or ""
            service.check_upload_size(name, upload.size or 0)
            read.append((name, upload.file.read(limit + 1)))
        fields = {"leaderboard": leaderboard, "device": device, "mode": mode, "force": force}
        stored = once.begin(who.user, fields, {str(i): f for i, f in enumerate(read)})
        if stored is not None:
            return stored

        def answer() -> JSONResponse:
            view = service.submit_batch(who.user, read, leaderboard, device, mode, token_id=who.token_id, force=force)
            out = batch_out(request, view)
            return JSONResponse(out.model_dump(mode="json"), status_code=202, headers={"Location": out.links.self})

        return once.run(answer)

    return await asyncio.to_thread(accept)


router.add_api_route(  # the token before the body (CredentialsFirst)
    "/batches",
    submit_batch,
    methods=["POST"],
    route_class_override=CredentialsFirst,
    status_code=202,
    response_model=BatchOut,
    summary="Submit a batch of candidates",
    responses={
        **ERRORS,
        **IDEMPOTENCY_RESPONSES,
        413: {"model": ErrorOut, "description": "A file too large"},
        422: {"model": ErrorOut, "description": "A field is not acceptable, or too many candidates"},
        429: {"model": ErrorOut, "description": "Rate limit, pending-job quota or GPU budget reached (Retry-After)"},
    },
)


@router.get("/batches/{batch_id}", response_model=BatchOut, responses=ERRORS, summary="A batch and its candidates")
def get_batch(
    request: Request,
    batch_id: int = BatchId,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> BatchOut:
    return batch_out(request, service.batch(batch_id, who.user, admin=who.is_admin))


@router.get(
    "/batches/{batch_id}/events",
    responses={**ERRORS, 200: {"content": {"text/event-stream": {}}, "description": "The event stream"}},
    summary="Candidates' results as they finish (Server-Sent Events)",
)
def batch_events(
    request: Request,
    batch_id: int = BatchId,
    who: Principal = Depends(submitter),
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
    service: LeaderboardService = Depends(service_of),
) -> StreamingResponse:
    """`candidate` events (data: a `BatchItemOut`, `id:` its position) as candidates finish, refused ones first, then
    `done` (data: the `BatchOut`); `timeout` or `error` (data: the error shape) when it ends otherwise. A reconnect
    sends every finished candidate again."""
    read = partial(service.batch, batch_id, who.user, admin=who.is_admin)
    first = read()  # a 404 before the stream opens
    token = credentials.credentials if credentials is not None else None
    recheck = partial(service.authenticate, token, Scope.SUBMIT)
    settings = request.app.state.settings
    give_back = request.app.state.stream_slots.take(who.user.identity)

    async def stream() -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        started = quiet_since = checked_at = loop.time()
        sent: set[int] = set()
        view = first
        try:
            yield f"retry: {RETRY_MS}\n\n"
            while True:
                for item in view.items:
                    if item.finished and item.position not in sent:
                        sent.add(item.position)
                        yield sse("candidate", BatchItemOut.model_validate(item).model_dump_json(), item.position)
                        quiet_since = loop.time()
                if view.done:
                    yield sse("done", batch_out(request, view).model_dump_json())
                    return
                if loop.time() - started >= settings.sse_timeout_s:
                    message = "This stream reached its longest life; reconnect to follow the batch on."
                    yield sse("timeout", json.dumps({"error": {"code": "timeout", "message": message, "field": None}}))
                    return
                if loop.time() - quiet_since >= settings.sse_keepalive_s:
                    yield ": keep-alive\n\n"
                    quiet_since = loop.time()
                if loop.time() - checked_at >= settings.sse_auth_check_s:
                    await asyncio.to_thread(recheck)
                    checked_at = loop.time()
                await asyncio.sleep(settings.sse_poll_s)
                finished = await asyncio.to_thread(service.batch_finished, batch_id)
                if finished != view.finished:  # the whole batch is read again only when a candidate finished
                    view = await asyncio.to_thread(read)
        except KernelcupError as exc:
            yield sse("error", json.dumps({"error": {"code": exc.code, "message": exc.message, "field": None}}))
        except Exception as exc:
            code, message = "database_unavailable", UNAVAILABLE
            if not is_unavailable(exc):
                log.error("event stream of batch %s failed", batch_id, exc_info=exc)
                code, message = "internal_error", "The event stream failed on our side; reconnect to resume."
            yield sse("error", json.dumps({"error": {"code": code, "message": message, "field": None}}))
        finally:
            give_back()

    return _SlotStream(
        stream(),
        give_back,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get(
    "/submissions/{submission_id}/reward",
    response_model=SubmissionRewardsOut,
    responses=ERRORS,
    summary="A submission's reward record per device",
)
def get_reward(
    submission_id: SubmissionId,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> SubmissionRewardsOut:
    """The versioned reward record (docs/schemas/reward.schema.json) of each of the submission's jobs: the verdict,
    the share of tests passed, the speedups over the baselines, the roofline share, the 95% interval's half-width
    and flags; null for a job that has not finished."""
    return SubmissionRewardsOut.model_validate(service.rewards(submission_id, who.user, admin=who.is_admin))


@router.post(
    "/submissions/{submission_id}/replay",
    status_code=202,
    response_model=SubmissionReceiptOut,
    summary="Time a stored run again with its own seeds",
    responses={
        **ERRORS,
        **IDEMPOTENCY_RESPONSES,
        403: {"model": ErrorOut, "description": "A ranked run, and the token is no admin's"},
        422: {"model": ErrorOut, "description": "A compare, or no finished run yet"},
        429: {"model": ErrorOut, "description": "Rate limit, pending-job quota or GPU budget reached (Retry-After)"},
    },
)
async def replay(
    request: Request,
    submission_id: SubmissionId,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
    key: str | None = Depends(idempotency_key),
    service: LeaderboardService = Depends(service_of),
) -> JSONResponse:
    """Queues a new submission of the same file, leaderboard and mode on each device the original ran on, timed on
    the original's own inputs (a ranked run's secret-seed inputs too); it never ranks. Yours for a test, benchmark or
    profile run; an admin's token for any, ranked ones included. Compare it with the original at
    `GET /submissions/{replay}/replay` once it ran."""
    once = Once(service, key, f"POST /submissions/{submission_id}/replay")

    def accept() -> JSONResponse:
        who = service.authenticate(credentials.credentials if credentials else None, Scope.SUBMIT)
        stored = once.begin(who.user, {"submission_id": submission_id}, {})
        if stored is not None:
            return stored
        return once.run(
            lambda: receipt_response(
                request, service.replay(submission_id, who.user, admin=who.is_admin, token_id=who.token_id)
            )
        )

    return await asyncio.to_thread(accept)


@router.get(
    "/submissions/{submission_id}/replay",
    response_model=ReplayReportOut,
    responses=ERRORS,
    summary="A replay beside the run it re-times",
)
def get_replay(
    submission_id: SubmissionId,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> ReplayReportOut:
    """For a replay's id: per device the original's and the replay's verdicts, and per timed case the replay's median
    against the original median's 95% interval (median ± 1.96 · 1.2533 · standard error)."""
    return ReplayReportOut.model_validate(service.replay_report(submission_id, who.user, admin=who.is_admin))
