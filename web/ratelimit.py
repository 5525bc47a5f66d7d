"""A per-caller request rate for the routes that cost CPU and need no token (``POST /api/v1/archive/similar``
tokenises and fingerprints the file sent): per account where the request carries a valid token, per client address
otherwise. In this process's memory: each API process counts its own callers (a restart forgets them), which bounds
what one caller can make one process do; the submission routes' hourly limit, which must hold across processes, is
counted in the database instead (``KERNELCUP_RATE_LIMIT_PER_HOUR``)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from fastapi import FastAPI, Request

from leaderboards.errors import RateLimited
from leaderboards.results import Principal

MAX_CALLERS = 10_000
"""The most callers remembered at once; past it the longest quiet ones are forgotten (memory stays bounded)."""


class RequestRate:
    """At most ``limit`` requests per caller in any ``window_s`` seconds (a sliding window). ``take`` is called from
    the thread pool, hence the lock."""

    def __init__(self, limit: int, window_s: float, what: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window_s = window_s
        self.what = what
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, caller: str) -> None:
        """Count one request of ``caller``, or refuse it (``RateLimited``: a 429 with ``Retry-After``)."""
        now = self.clock()
        with self._lock:
            times = self._seen.pop(caller, None) or deque()
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) >= self.limit:
                self._seen[caller] = times
                wait = times[0] + self.window_s - now
                raise RateLimited(
                    f"{self.what} takes at most {self.limit} requests per caller every {self.window_s:.0f} s "
                    f"(per account with a token, per address without); try again in {max(1, round(wait))} s.",
                    datetime.now(UTC) + timedelta(seconds=wait),
                )
            times.append(now)
            self._seen[caller] = times  # re-inserted: the dict's order is the callers' last request
            while len(self._seen) > MAX_CALLERS:
                del self._seen[next(iter(self._seen))]


def caller_of(request: Request, who: Principal | None) -> str:
    """The key a request is counted under: its account where it carries a valid token, else its client address (as
    the server sees it: behind a proxy, let uvicorn take it from ``X-Forwarded-For``; docs/archive.md)."""
    if who is not None:
        return f"account:{who.user.identity}"
    return f"address:{request.client.host if request.client else 'unknown'}"


_created = threading.Lock()


def rate_of(app: FastAPI, name: str, limit: int, window_s: float, what: str) -> RequestRate:
    """The app's ``RequestRate`` called ``name``, made on first use (each app its own: tests build many)."""
    rates: dict[str, RequestRate] | None = getattr(app.state, "request_rates", None)
    if rates is None or name not in rates:
        with _created:
            rates = getattr(app.state, "request_rates", None)
            if rates is None:
                rates = app.state.request_rates = {}
            rates.setdefault(name, RequestRate(limit, window_s, what))
    return rates[name]
