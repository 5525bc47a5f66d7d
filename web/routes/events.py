"""``GET /api/v1/submissions/{id}/events``: a submission's live progress as Server-Sent Events.

Events: ``progress`` (data: ``ProgressOut``; stored events carry an ``id:`` so a client that reconnects with
``Last-Event-ID`` resumes after it), ``done`` (data: ``SubmissionStatusOut``, the last event), ``timeout`` and
``error`` (data: the error shape). A comment line keeps an idle connection open. The stream is the core's one
follower (``service.follow_async``); a client that disconnects cancels it, and nothing is left running. Open
streams are capped per account and in all (``StreamSlots``): one past a cap is a 429 ``too_many_streams``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials
from sse_starlette import ServerSentEvent
from starlette.types import Receive, Send
from starlette.types import Scope as ASGIScope

from leaderboards.db import is_unavailable
from leaderboards.errors import KernelcupError, RateLimited, UserError
from leaderboards.events import FollowTimeout
from leaderboards.results import Principal, Scope
from leaderboards.service import LeaderboardService
from web.auth import bearer, service_of, submitter
from web.errors import UNAVAILABLE
from web.routes.common import ID_MAX, SubmissionId
from web.routes.submissions import ERRORS
from web.schemas import API_PREFIX, ProgressOut, SubmissionStatusOut

router = APIRouter(prefix=API_PREFIX, tags=["submissions"])
log = logging.getLogger(__name__)

RETRY_MS = 2000
"""How long a client waits before reconnecting (the ``retry:`` field)."""
FULL_RETRY_S = 30
"""The ``Retry-After`` of a stream refused for the caps (streams end when their submission does)."""


class StreamSlots:
    """The open event streams of this process, per account and in all: each polls the database until its submission
    ends (up to ``KERNELCUP_API_SSE_TIMEOUT_S``), so one account's thousand streams slowed every other request.
    ``take`` refuses one past ``KERNELCUP_API_SSE_MAX_PER_USER`` or ``KERNELCUP_API_SSE_MAX_STREAMS`` with a 429;
    routes take a slot in a worker thread and the stream gives it back on the event loop, hence the lock."""

    def __init__(self, per_user: int, total: int) -> None:
        self.per_user = per_user
        self.total = total
        self.open: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, who: str) -> Callable[[], None]:
        """A slot for ``who``, or ``RateLimited``; the answer gives the slot back (once, however often called)."""
        with self._lock:
            mine, everyone = self.open.get(who, 0), sum(self.open.values())
            if mine >= self.per_user:
                raise self._full(
                    f"You have {mine} event streams open, the most one account may have "
                    f"(KERNELCUP_API_SSE_MAX_PER_USER={self.per_user}). Close one (a browser tab, a `--follow`), "
                    "or poll GET /api/v1/submissions/{id} instead."
                )
            if everyone >= self.total:
                raise self._full(
                    f"The server has {everyone} event streams open, its most (KERNELCUP_API_SSE_MAX_STREAMS="
                    f"{self.total}). Try again in a minute, or poll GET /api/v1/submissions/{{id}} instead."
                )
            self.open[who] = mine + 1
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            with self._lock:
                if given_back:
                    return
                given_back = True
                left = self.open.get(who, 1) - 1
                if left > 0:
                    self.open[who] = left
                else:
                    self.open.pop(who, None)

        return give_back

    @staticmethod
    def _full(message: str) -> RateLimited:
        return RateLimited(message, datetime.now(UTC) + timedelta(seconds=FULL_RETRY_S), code="too_many_streams")


class _SlotStream(StreamingResponse):
    """A stream that gives its slot back when it has been sent, or failed, or was never started (a client gone
    before the first byte: the generator's own ``finally`` would not run then)."""

    def __init__(self, content: AsyncIterator[str], give_back: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.give_back = give_back

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.give_back()


def sse(event: str, data: str, event_id: int | None = None) -> str:
    """One event, framed by sse-starlette's ``ServerSentEvent`` (a line break in ``data`` is split into ``data:``
    lines and one in the name or id dropped, so nothing sent can make an event of its own)."""
    return _framed(ServerSentEvent(data, event=event, id=None if event_id is None else str(event_id), sep="\n"))


def _framed(event: ServerSentEvent) -> str:
    return event.encode().decode()


RETRY_LINE = _framed(ServerSentEvent(retry=RETRY_MS, sep="\n"))
KEEPALIVE_LINE = _framed(ServerSentEvent(comment="keep-alive", sep="\n"))


def _error(code: str, message: str) -> str:
    return sse("error", json.dumps({"error": {"code": code, "message": message, "field": None}}))


@router.get(
    "/submissions/{submission_id}/events",
    responses={**ERRORS, 200: {"content": {"text/event-stream": {}}, "description": "The event stream"}},
    summary="Live progress (Server-Sent Events)",
)
def events(
    request: Request,
    submission_id: SubmissionId,
    after: int = Query(0, ge=0, le=ID_MAX, description="Resume after this event id (or send Last-Event-ID)."),
    last_event_id: str | None = Header(None, alias="Last-Event-ID"),
    who: Principal = Depends(submitter),
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
    service: LeaderboardService = Depends(service_of),
) -> StreamingResponse:
    token = credentials.credentials if credentials is not None else None
    recheck = partial(service.authenticate, token, Scope.SUBMIT)
    return event_stream(request, submission_id, who, service, resume_after(last_event_id, after), recheck)


def resume_after(last_event_id: str | None, after: int) -> int:
    """The event id to resume after: ``Last-Event-ID`` where it is a number (a browser sends the last ``id:`` it
    got), else ``after``. One past the largest id is an invalid field, not an overflow in the database."""
    text = (last_event_id or "").strip()
    if not (text.isascii() and text.isdigit()):
        return after
    if len(text) > len(str(ID_MAX)) or int(text) > ID_MAX:
        raise UserError(
            f"Last-Event-ID {text[:30]!r} is not an event id (ids are at most {ID_MAX}); send the id of the last "
            "event received, or none to start from the beginning.",
            code="invalid_field",
            field="Last-Event-ID",
        )
    return int(text)


def event_stream(
    request: Request,
    submission_id: int,
    who: Principal,
    service: LeaderboardService,
    resume: int,
    recheck: Callable[[], object],
) -> StreamingResponse:
    """The stream of a submission for whoever may see it (the API's route and the pages' share it); a 404 before it
    opens for anyone else. Blocks on one status read: call it from a thread (a plain route function).

    ``recheck`` checks again that the stream's reader is still signed in (the token, or the page's session), every
    ``KERNELCUP_API_SSE_AUTH_CHECK_S``: once the token is revoked or the session signed out, it raises
    ``InvalidToken`` and the stream ends with an ``error`` event, so a stolen credential's streams do not outlive it."""
    service.submission_status_of(submission_id, who.user, admin=who.is_admin)  # 404 before the stream opens
    settings = request.app.state.settings
    metrics = request.app.state.metrics
    give_back = request.app.state.stream_slots.take(who.user.identity)  # 429 past the caps

    async def stream() -> AsyncIterator[str]:
        metrics.stream_opened()
        loop = asyncio.get_running_loop()
        quiet_since = checked_at = loop.time()
        try:
            yield RETRY_LINE
            async for progress in service.follow_async(
                submission_id, poll_s=settings.sse_poll_s, timeout_s=settings.sse_timeout_s, after_id=resume
            ):
                if loop.time() - checked_at >= settings.sse_auth_check_s:
                    await asyncio.to_thread(recheck)  # InvalidToken: the error event below, and the stream ends
                    checked_at = loop.time()
                for update in progress.updates:
                    yield sse("progress", ProgressOut.model_validate(update).model_dump_json(), update.event_id)
                    quiet_since = loop.time()
                if progress.done:
                    status = await asyncio.to_thread(
                        service.submission_status_of, submission_id, who.user, admin=who.is_admin
                    )
                    yield sse("done", SubmissionStatusOut.model_validate(status).model_dump_json())
                    return
                if loop.time() - quiet_since >= settings.sse_keepalive_s:
                    yield KEEPALIVE_LINE
                    quiet_since = loop.time()
        except FollowTimeout as exc:
            yield sse("timeout", json.dumps({"error": {"code": exc.code, "message": exc.message, "field": None}}))
        except KernelcupError as exc:
            yield _error(exc.code, exc.message)
        except Exception as exc:
            if not is_unavailable(exc):
                log.error("event stream of submission %s failed", submission_id, exc_info=exc)
                yield _error("internal_error", "The event stream failed on our side; reconnect to resume.")
            else:
                yield _error("database_unavailable", UNAVAILABLE)
        finally:
            metrics.stream_closed()
            give_back()

    return _SlotStream(
        stream(),
        give_back,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
