"""Who is asking: the bearer token of a request, checked by the service (``authenticate``).

Dependencies are plain functions, so FastAPI runs them in its thread pool: the database lookup never blocks the
event loop. A missing, unknown, expired or revoked token is a 401; a valid one without the scope a 403.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from leaderboards.results import Principal, Scope, UserRef
from leaderboards.service import LeaderboardService

bearer = HTTPBearer(
    auto_error=False,
    description="An API token: `/token` in Discord, or `kernelcup tokens create NAME` on the server.",
)


async def service_of(request: Request) -> LeaderboardService:
    """The service (a dependency; async because it only reads app state: no thread pool hop for it)."""
    return _service(request)


def _service(request: Request) -> LeaderboardService:
    return request.app.state.service


def _token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return credentials.credentials if credentials is not None else None


def submitter(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Principal:
    """A token with the ``submit`` scope (every account's token has it)."""
    return _service(request).authenticate(_token(credentials), Scope.SUBMIT)


def admin(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Principal:
    """A token with the ``admin`` scope."""
    return _service(request).authenticate(_token(credentials), Scope.ADMIN)


def maybe_user(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
) -> Principal | None:
    """Whoever the token speaks for, or None without one (public reads); a bad token is still a 401."""
    token = _token(credentials)
    return None if token is None else _service(request).authenticate(token, None)


MaybeUser = Annotated[Principal | None, Depends(maybe_user)]
"""A route's reader, if a token came: a public read that also shows the hidden leaderboards they joined with an invite
code. Defaults to None when the route function is called as a plain function (the pages do)."""


def viewer_of(who: Principal | None) -> UserRef | None:
    return who.user if who is not None else None


class CredentialsFirst(APIRoute):
    """A route that checks the request's token (scope ``submit``) before its body is read, for every route that
    takes uploads with a token (``POST /submissions``, ``POST /batches``). FastAPI parses a multipart body (every
    file of it, spooled to disk) before it solves any dependency, so such a route checked its token only once the
    whole upload had come in (a batch up to 64 MiB): anyone could make the server take that much (red team,
    2026-11-29). The token is checked here, in the route's handler before FastAPI's own, which reads the body; the
    route checks it again (a token revoked in between is refused)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def credentials_first(request: Request) -> Response:
            credentials = await bearer(request)
            token = credentials.credentials if credentials is not None else None
            await asyncio.to_thread(request.app.state.service.authenticate, token, Scope.SUBMIT)
            return await handler(request)

        return credentials_first
