"""The one error shape, ``{"error": {"code", "message", "field"}}``, mapped once from the core's exceptions.

The core's ``UserError`` family carries ``code`` and ``field``; only the HTTP status is decided here, by the
first class in the exception's MRO that has one. Whatever else escapes a route (a bug, a dropped database
connection) is caught by ``ErrorMiddleware``: a database that cannot be reached is a 503, anything else a 500
whose message names a reference to the log line; never a traceback, a URL or a setting's value in a response.
"""

from __future__ import annotations

import html
import logging
import math
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import annotated_types
from fastapi import FastAPI, Request
from fastapi import HTTPException as FastAPIHTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leaderboards.db import is_unavailable
from leaderboards.errors import (
    AlreadyExists,
    AlreadyFinished,
    Banned,
    DatabaseNotReady,
    FileTooLarge,
    InvalidToken,
    KernelcupError,
    LeaderboardClosed,
    LeaderboardPaused,
    NeedsForce,
    NotFound,
    PermissionDenied,
    RateLimited,
    UserError,
)
from leaderboards.events import FollowTimeout
from leaderboards.formatting import error_message

log = logging.getLogger("web.errors")

STATUS: dict[type[BaseException], int] = {
    InvalidToken: 401,
    PermissionDenied: 403,
    Banned: 403,
    NotFound: 404,
    LeaderboardClosed: 409,
    LeaderboardPaused: 409,
    AlreadyExists: 409,
    NeedsForce: 409,
    AlreadyFinished: 409,
    FileTooLarge: 413,
    RateLimited: 429,
    UserError: 422,
    FollowTimeout: 504,
    DatabaseNotReady: 503,
    KernelcupError: 500,
}

HTTP_CODES = {
    400: "bad_request",
    401: "invalid_token",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "file_too_large",
    415: "unsupported_media_type",
    422: "invalid_field",
    429: "rate_limited",
}

UNAVAILABLE = "The database cannot be reached right now; please try again in a minute."
NUL_MESSAGE = "The request holds a NUL character (U+0000) in a name or a text field; leave it out."


def holds_nul(exc: BaseException) -> bool:
    """Whether PostgreSQL's driver refused a NUL character of the request's text (a name in the path, a query, a form
    or JSON field): the request's fault, a 422, wherever the text went (SQLite takes it; PostgreSQL text cannot)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ValueError) and "NUL (0x00)" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False

API_PATHS = ("/api/", "/healthz", "/readyz", "/metrics")
"""What is not a web page (docs/web.md): the JSON API and the operations routes."""


def is_page(path: str) -> bool:
    return not path.startswith(API_PATHS)


def page_error(status: int, message: str, headers: dict[str, str] | None = None) -> HTMLResponse:
    """A bare error page for what escaped a page's route (no template: the failure may be in rendering)."""
    body = (
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>Error</title>'
        '<link rel="stylesheet" href="/static/style.css"><main><h1>Something went wrong</h1>'
        f'<p class="error" role="alert">{html.escape(message)}</p>'
        '<p><a href="/">Back to the leaderboards</a></p></main>'
    )
    return HTMLResponse(body, status_code=status, headers=headers)


def error_response(
    status: int, code: str, message: str, field: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message, "field": field}}, status_code=status, headers=headers
    )


def status_of(exc: BaseException) -> int:
    return next((STATUS[k] for k in type(exc).__mro__ if k in STATUS), 500)


def core_error_response(exc: KernelcupError) -> JSONResponse:
    status = status_of(exc)
    headers: dict[str, str] = {}
    if isinstance(exc, InvalidToken):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(max(1, math.ceil((exc.retry_at - datetime.now(UTC)).total_seconds())))
    if isinstance(exc, DatabaseNotReady):
        return error_response(503, exc.code, UNAVAILABLE)  # its message names the database's address
    if status >= 500:
        log.error("%s: %s", type(exc).__name__, exc.message)
    return error_response(status, exc.code, exc.message, exc.field, headers or None)


def _field(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header", "form")]
    return ".".join(parts) or "body"


async def _on_core(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, KernelcupError)
    return core_error_response(exc)


INT_ERRORS = frozenset(
    {
        "int_type",
        "int_parsing",
        "int_parsing_size",
        "int_from_float",
        "finite_number",
        "greater_than",
        "greater_than_equal",
        "less_than",
        "less_than_equal",
    }
)
"""Pydantic's errors of an integer field: their message says the field's range instead."""


def _bounds(info: Any) -> tuple[int, int] | None:
    low = high = None
    for m in getattr(info, "metadata", ()):
        if isinstance(m, annotated_types.Ge):
            low = m.ge
        elif isinstance(m, annotated_types.Gt):
            low = m.gt + 1  # type: ignore[operator]
        elif isinstance(m, annotated_types.Le):
            high = m.le
        elif isinstance(m, annotated_types.Lt):
            high = m.lt - 1  # type: ignore[operator]
    return (low, high) if isinstance(low, int) and isinstance(high, int) else None


def _params(dependant: Any) -> Iterator[tuple[str, Any]]:
    for kind in ("path", "query", "header", "cookie", "body"):
        for param in getattr(dependant, f"{kind}_params", ()):
            yield kind, param
    for sub in getattr(dependant, "dependencies", ()):
        yield from _params(sub)


def int_range(request: Request, loc: tuple[Any, ...]) -> tuple[int, int] | None:
    """The range of the integer field at ``loc`` (pydantic's error location) of the request's route, where it has
    one: every integer a route takes has (``tests/web/test_bounds.py``)."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    if dependant is None or len(loc) < 2:
        return None
    kind, name = loc[0], loc[1]
    for where, param in _params(dependant):
        if where != kind:
            continue
        if param.alias == name:
            return _bounds(param.field_info)
        fields = getattr(param.field_info.annotation, "model_fields", None)
        if kind == "body" and isinstance(fields, dict) and name in fields and len(loc) == 2:
            return _bounds(fields[name])
    return None


async def _on_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request", "type": ""}
    loc = tuple(first.get("loc", ()))
    field = _field(loc)
    msg = error_message(first) or "invalid"
    bounds = int_range(request, loc) if first.get("type") in INT_ERRORS else None
    if first.get("type") == "missing":
        message = f"{field} is required."
    elif bounds is not None:
        message = f"{field} must be a whole number from {bounds[0]} to {bounds[1]}."
    elif first.get("type") in ("json_invalid", "model_attributes_type", "dict_type"):
        message = "The request body is not valid JSON of the expected shape."
    else:
        message = f"{field}: {msg}."
    if len(errors) > 1:
        message += f" ({len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} in the request.)"
    return error_response(422, "invalid_field", message, field)


async def _on_http(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = getattr(exc, "code", None) or HTTP_CODES.get(exc.status_code, "error")
    detail = exc.detail if isinstance(exc.detail, str) else "The request cannot be served."
    if exc.status_code == 404 and detail == "Not Found":
        detail = "There is no such page; the API is under /api/v1 (see /api/docs)."
    elif exc.status_code == 400 and "multipart" not in detail.lower() and "parsing the body" in detail.lower():
        detail = "The request body could not be read: send multipart/form-data (file, leaderboard, …)."
    return error_response(exc.status_code, code, detail, headers=getattr(exc, "headers", None))


def install(app: FastAPI) -> None:
    app.add_exception_handler(KernelcupError, _on_core)
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)


ErrorPage = Callable[[Request, int, str], Awaitable[Response]]
"""Renders a page's error (``web.pages.base.error_page``: the site's own page, with its navigation)."""


class ErrorMiddleware:
    """Turns anything that escaped the routes into the error shape: 503 when the database cannot be reached, else
    500 with a reference to the log line. A response already under way (an event stream) is ended instead. A page's
    500 is ``page``'s (the bare ``page_error`` without it); a page's 503 and 422 stay bare: the database that the
    navigation needs is what failed, or was refused the request's text."""

    def __init__(self, app: ASGIApp, page: ErrorPage | None = None) -> None:
        self.app = app
        self.page = page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            response: Response
            if holds_nul(exc):
                log.info("%s %s: a NUL character in the request", scope["method"], scope["path"][:200])
                if is_page(scope["path"]):
                    response = page_error(422, NUL_MESSAGE)
                else:
                    response = error_response(422, "invalid_field", NUL_MESSAGE)
            elif is_unavailable(exc):
                log.warning("%s %s: database unavailable (%s)", scope["method"], scope["path"], type(exc).__name__)
                if is_page(scope["path"]):
                    response = page_error(503, UNAVAILABLE, headers={"Retry-After": "5"})
                else:
                    response = error_response(503, "database_unavailable", UNAVAILABLE, headers={"Retry-After": "5"})
            else:
                ref = uuid.uuid4().hex[:12]
                log.error("%s %s failed (ref %s)", scope["method"], scope["path"], ref, exc_info=exc)
                message = f"Something went wrong on our side (not your fault); reference {ref}."
                if is_page(scope["path"]):
                    response = await self.page(Request(scope), 500, message) if self.page else page_error(500, message)
                else:
                    response = error_response(500, "internal_error", message)
            if not started:
                await response(scope, receive, send)


class BodyLimitMiddleware:
    """Refuses a request body above its limit at the limit: at once when ``Content-Length`` says so, else while
    it streams in. Nothing above the limit is read into memory (or onto disk by the multipart parser).

    ``limit_for(scope)`` gives the limit of a request, its error code and message, e.g. a submission's file limit
    plus the multipart envelope.
    """

    def __init__(self, app: ASGIApp, limit_for: Any) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        limit, code, message = self.limit_for(scope)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await error_response(413, code, message)(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(code, message)  # an HTTPException: FastAPI's body parsing passes it on as is
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await error_response(413, code, message)(scope, receive, send)


class BodyTooLarge(FastAPIHTTPException):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(status_code=413, detail=message)
        self.code = code
