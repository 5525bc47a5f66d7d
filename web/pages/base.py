"""What every page shares: who is looking (from the session cookie), the security headers, HTML error pages."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leaderboards.errors import InvalidToken, KernelcupError, SubmissionNotFound
from leaderboards.results import Principal
from web import errors
from web.errors import is_page
from web.pages.render import Viewer, render
from web.pages.session import Session, Sessions

log = logging.getLogger(__name__)

PAGE_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        b"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
]


def sessions_of(request: Request) -> Sessions:
    return request.app.state.sessions


def session_of(request: Request) -> Session | None:
    return sessions_of(request).of(request)


def principal_of(request: Request, session: Session | None) -> Principal | None:
    """Whoever the session speaks for; None when signed out (here or from elsewhere), expired, or its token was
    revoked or expired."""
    if session is None or not session.signed_in:
        return None
    try:
        return request.app.state.service.session_principal(session.sid)
    except InvalidToken:
        return None


def signed_in(request: Request) -> bool:
    """Whether the request carries a signed-in session (read from the cookie alone: no database)."""
    session = session_of(request)
    return session is not None and session.signed_in


def viewer(request: Request) -> Viewer:
    """A dependency (a plain function: FastAPI runs it in its thread pool, the token check reads the database)."""
    session = session_of(request)
    return Viewer(principal_of(request, session), sessions_of(request).csrf_token(session) if session else "")


def sign_in_url(request: Request) -> str:
    """The sign-in page, coming back to this one."""
    return f"/signin?{urlencode({'next': request.url.path})}"


def sign_in_first(request: Request) -> RedirectResponse:
    return RedirectResponse(sign_in_url(request), status_code=303)


class PageHeadersMiddleware:
    """The security headers on every page and static file (not the API, whose docs page loads a CDN's assets)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_page(scope["path"]):
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"cache-control" or not static]
                headers.extend(PAGE_HEADERS)
                if static:
                    headers.append((b"cache-control", b"public, max-age=3600"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


async def error_page(request: Request, status: int, message: str, *, sign_in: str | None = None) -> Response:
    """An error as a page with the site's navigation, signed in as the visitor is (a 404 or 403 had dropped them
    to "Sign in"). The failure may be the database's or the templates': then the visitor shows signed out, and
    past a template that does not render, the bare page of ``errors.page_error``."""
    try:
        view = await asyncio.to_thread(viewer, request)  # reads the session's row: not on the event loop
    except Exception:  # the database is what failed, most likely: the page goes on without the signed-in name
        view = Viewer(None)
    try:
        return render(request, "error.html", view, status=status, status_code=status, message=message, sign_in=sign_in)
    except Exception as exc:
        log.error("the error page of %s failed to render", request.url.path, exc_info=exc)
        return errors.page_error(status, message)


async def _answer(
    handler: Callable[[Request, Any], Response | Awaitable[Response]], request: Request, exc: Exception
) -> Response:
    """What an exception handler answers, whether it is a coroutine function or a plain one (Starlette takes both)."""
    got = handler(request, exc)
    return await got if inspect.isawaitable(got) else got


def install_error_pages(app: FastAPI) -> None:
    """Errors of pages as pages (a message, no stack trace); the API's stay in the one JSON shape."""
    on_core = app.exception_handlers[KernelcupError]
    on_http = app.exception_handlers[StarletteHTTPException]

    def page_or(api: Callable[[Request, Any], Response | Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
        async def handler(request: Request, exc: Exception) -> Response:
            if not is_page(request.url.path):
                return await _answer(api, request, exc)
            sign_in = None
            if isinstance(exc, KernelcupError):
                status, message = errors.status_of(exc), exc.message
                if status >= 500:  # the API's answer logs it and says what may be said (never a database's address)
                    answer = await _answer(api, request, exc)
                    status, message = answer.status_code, json.loads(bytes(answer.body))["error"]["message"]
                elif isinstance(exc, SubmissionNotFound) and not signed_in(request):
                    sign_in = sign_in_url(request)  # "none of yours": a signed-out visitor's may be theirs
            else:
                assert isinstance(exc, StarletteHTTPException)
                status = exc.status_code
                message = "There is no such page." if status == 404 else str(exc.detail)
            return await error_page(request, status, message, sign_in=sign_in)

        return handler

    app.add_exception_handler(KernelcupError, page_or(on_core))
    app.add_exception_handler(StarletteHTTPException, page_or(on_http))
