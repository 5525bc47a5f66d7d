"""The ``Idempotency-Key`` header of every submitting route (issue 33, ``leaderboards/idempotency.py``): a retry with
the same key and the same request gets the first answer (with ``Idempotent-Replayed: true``) and runs nothing; the
same key with another request is a 409 that names the key."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from fastapi import Header
from fastapi.responses import JSONResponse

from leaderboards.idempotency import MAX_KEY, request_digest
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"

IDEMPOTENCY_RESPONSES: dict[int | str, dict[str, Any]] = {
    409: {
        "description": "The Idempotency-Key was used for a different request (idempotency_key_reused), or its "
        "first request is still being answered (idempotency_key_in_use)"
    }
}


def idempotency_key(
    key: str | None = Header(
        None,
        alias=HEADER,
        max_length=MAX_KEY,
        description="A key of your choosing (e.g. a UUID) that names this request: a retry with the same key and "
        "the same fields and files gets the first answer back and runs nothing; the same key with a different "
        "request is a 409. Keys belong to your account and are kept a day (KERNELCUP_IDEMPOTENCY_TTL_S).",
    ),
) -> str | None:
    return key


class Once:
    """One submitting request under its key (or none: then every call is a no-op). Call from a worker thread:
    ``begin`` (a stored answer ends the request), then ``finish`` with the answer, or ``release`` on an error."""

    def __init__(self, service: LeaderboardService, key: str | None, route: str) -> None:
        self.service = service
        self.key = key
        self.route = route
        self.user: UserRef | None = None

    def begin(
        self, user: UserRef, fields: dict[str, Any], files: dict[str, tuple[str, bytes] | None]
    ) -> JSONResponse | None:
        if self.key is None:
            return None
        stored = self.service.idempotency_begin(user, self.key, self.route, request_digest(self.route, fields, files))
        if stored is not None:
            headers = {REPLAYED: "true"}
            location = _location(stored.body)
            if location:
                headers["Location"] = location
            return JSONResponse(stored.body, status_code=stored.status_code, headers=headers)
        self.user = user
        return None

    def finish(self, response: JSONResponse) -> JSONResponse:
        if self.key is not None and self.user is not None:
            self.service.idempotency_finish(self.user, self.key, response.status_code, json.loads(bytes(response.body)))
        return response

    def run(self, answer: Callable[[], JSONResponse]) -> JSONResponse:
        """``answer()``, kept for the key's retries; on an error the key is freed (its retry runs) and it is raised."""
        try:
            response = answer()
        except BaseException:
            with contextlib.suppress(Exception):
                self.release()
            raise
        return self.finish(response)

    def release(self) -> None:
        if self.key is not None and self.user is not None:
            self.service.idempotency_release(self.user, self.key)


def _location(body: Any) -> str | None:
    links = body.get("links") if isinstance(body, dict) else None
    self_link = links.get("self") if isinstance(links, dict) else None
    return self_link if isinstance(self_link, str) else None
