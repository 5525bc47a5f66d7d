"""A small time-bounded memo for public reads that many clients ask at once (a leaderboard's ranking page).

Each uvicorn worker has its own; an answer is at most ``ttl_s`` old (``KERNELCUP_API_RANKINGS_CACHE_S``), which is
what lets 200 readers of one ranking cost about one query a second instead of 200. When an answer expires, one
request recomputes it while the others are served the previous one (no stampede of identical queries). Errors are
never cached.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from starlette.types import ASGIApp, Receive, Scope, Send

T = TypeVar("T")

MAX_ENTRIES = 1024


class TTLCache:
    def __init__(self, ttl_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.clock = clock
        self._data: dict[Hashable, tuple[float, Any]] = {}
        self._refreshing: set[Hashable] = set()
        self._lock = threading.Lock()

    def fresh(self, key: Hashable) -> Any | None:
        """The cached answer if it is still fresh, else None (cheap: no computation, usable on an event loop)."""
        if self.ttl_s <= 0:
            return None
        with self._lock:
            hit = self._data.get(key)
        return hit[1] if hit is not None and self.clock() - hit[0] < self.ttl_s else None

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The answer for ``key``: cached while fresh; when stale and another caller is already recomputing it,
        the stale one; else computed here (blocking)."""
        if self.ttl_s <= 0:
            return compute()
        now = self.clock()
        with self._lock:
            hit = self._data.get(key)
            if hit is not None and (now - hit[0] < self.ttl_s or key in self._refreshing):
                return hit[1]
            self._refreshing.add(key)
        try:
            value = compute()
        finally:
            with self._lock:
                self._refreshing.discard(key)
        with self._lock:
            if len(self._data) >= MAX_ENTRIES:
                self._data.clear()
            self._data[key] = (self.clock(), value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class CachedReadsMiddleware:
    """Answers a fresh cached read before routing: the hot path of 200 readers polling one ranking costs a dict
    look-up, not a trip through dependencies and serialisation. A miss goes on to the route, which fills the
    cache under the same key (the path and the raw query string)."""

    def __init__(self, app: ASGIApp, cache: TTLCache, pattern: re.Pattern[str], route: str) -> None:
        self.app = app
        self.cache = cache
        self.pattern = pattern
        self.route = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and self.pattern.match(scope["path"]):
            body = self.cache.fresh(read_key(scope))
            if body is not None:
                scope["kernelcup.route"] = self.route  # for the request metrics
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def read_key(scope: Scope) -> tuple[str, bytes]:
    return (scope["path"], scope.get("query_string", b""))
