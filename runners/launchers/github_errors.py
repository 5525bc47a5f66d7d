"""Reading GitHub's errors: how long a rate limit asks to wait, the useful end of a network error, the message."""

from __future__ import annotations

import re
import time

from github import GithubException


def rate_limit_wait(exc: GithubException) -> float:
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    if "retry-after" in headers:
        return float(headers["retry-after"])
    if "x-ratelimit-reset" in headers:
        return max(0.0, float(headers["x-ratelimit-reset"]) - time.time())
    return 60.0


def net_reason(exc: Exception) -> str:
    """The useful end of a network error (requests nests the OS reason deep inside its message)."""
    text = str(exc)
    found = re.search(r"\[Errno -?\d+\] ([^)\"']+)", text)
    return f"{type(exc).__name__}: {found.group(1).strip()}" if found else text[:300]


def message_of(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"])
    return str(data or exc)
