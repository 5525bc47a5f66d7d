"""The screening hook (issue 29): an operator's check of a submission's code before it is queued.

An operator names a command (``KERNELCUP_SCREEN_COMMAND``) or an HTTP endpoint (``KERNELCUP_SCREEN_URL``). Before a
submission is stored, the service hands it the submission as JSON::

    {"leaderboard": "vectoradd", "file_name": "sub.py", "mode": "ranked", "user": "alice", "code": "..."}

(on the command's stdin, or as the body of a POST) and reads one JSON answer (the command's stdout, or the response
body)::

    {"verdict": "pass" | "flag" | "refuse", "reason": "why, in words the author may read"}

- ``pass``: the submission is queued as usual.
- ``flag``: it is queued and ranks, flagged for a moderator, the reason kept (``leaderboards/moderation.py``).
- ``refuse``: it is not stored; the author reads the reason.

A hook that fails (exits non-zero, times out after ``KERNELCUP_SCREEN_TIMEOUT_S``, answers something else than that
JSON, or cannot be reached) never loses a submission: it is queued flagged, the failure as the reason (fail open).
With ``KERNELCUP_SCREEN_FAIL_CLOSED`` it is refused instead, with a message that says the check is down, not the
file.
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import httpx

from leaderboards.settings import CoreSettings

log = logging.getLogger(__name__)

MAX_REASON = 500
MAX_ANSWER = 64 * 1024
"""Largest answer read from a hook."""
SCREENING_ACTOR = "screening"


class ScreenVerdict(StrEnum):
    PASS = "pass"
    FLAG = "flag"
    REFUSE = "refuse"


@dataclass(frozen=True)
class Screening:
    verdict: ScreenVerdict
    reason: str
    hook_failed: bool = False
    """The hook did not answer (the verdict is the fail-open flag or the fail-closed refusal)."""


@dataclass(frozen=True)
class ScreenRequest:
    leaderboard: str
    file_name: str
    mode: str
    user: str
    code: str

    def to_json(self) -> dict[str, str]:
        return {"leaderboard": self.leaderboard, "file_name": self.file_name, "mode": self.mode, "user": self.user,
                "code": self.code}  # fmt: skip


class HookFailed(Exception):
    """The hook gave no usable answer; the message says why (for the admin, and the author of a flagged entry)."""


class Screener(Protocol):
    def ask(self, request: ScreenRequest) -> str:
        """The hook's raw answer; ``HookFailed`` when it gave none."""
        ...


class CommandScreener:
    """Runs the operator's command with the request on stdin (no shell)."""

    def __init__(self, command: str, timeout_s: float) -> None:
        self.argv = shlex.split(command)
        self.timeout_s = timeout_s

    def ask(self, request: ScreenRequest) -> str:
        try:
            done = subprocess.run(
                self.argv,
                input=json.dumps(request.to_json()).encode(),
                capture_output=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HookFailed(f"the screening command took longer than {self.timeout_s:g} s") from None
        except OSError as exc:
            raise HookFailed(f"the screening command could not start ({exc.strerror or exc})") from None
        if done.returncode != 0:
            raise HookFailed(f"the screening command exited with status {done.returncode}")
        return done.stdout[:MAX_ANSWER].decode("utf-8", "replace")


class HttpScreener:
    """POSTs the request as JSON to the operator's endpoint."""

    def __init__(self, url: str, timeout_s: float, *, transport: httpx.BaseTransport | None = None) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.transport = transport

    def ask(self, request: ScreenRequest) -> str:
        try:
            with httpx.Client(timeout=self.timeout_s, transport=self.transport) as client:
                response = client.post(self.url, json=request.to_json())
        except httpx.TimeoutException:
            raise HookFailed(f"the screening endpoint took longer than {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise HookFailed(f"the screening endpoint could not be reached ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise HookFailed(f"the screening endpoint answered HTTP {response.status_code}")
        return response.text[:MAX_ANSWER]


def screener_from(settings: CoreSettings) -> Screener | None:
    """The hook the settings name (the command when both are set), or None."""
    if settings.screen_command:
        return CommandScreener(settings.screen_command, settings.screen_timeout_s)
    if settings.screen_url:
        return HttpScreener(settings.screen_url, settings.screen_timeout_s)
    return None


def parse_answer(text: str) -> Screening:
    """A hook's JSON answer; ``HookFailed`` naming what is wrong with it."""
    try:
        answer: Any = json.loads(text)
    except ValueError:
        raise HookFailed("the screening hook's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise HookFailed("the screening hook's answer is not a JSON object")
    try:
        verdict = ScreenVerdict(str(answer.get("verdict", "")).strip().lower())
    except ValueError:
        got = answer.get("verdict")
        raise HookFailed(f"the screening hook answered verdict {got!r}, not pass, flag or refuse") from None
    reason = str(answer.get("reason") or "").strip()[:MAX_REASON]
    return Screening(verdict, reason)


def screen(screener: Screener, request: ScreenRequest, *, fail_closed: bool) -> Screening:
    """The hook's verdict on ``request``; when the hook fails, flag (fail open) or refuse (``fail_closed``)."""
    try:
        return parse_answer(screener.ask(request))
    except HookFailed as exc:
        log.warning("screening hook failed on %s for %s: %s", request.file_name, request.leaderboard, exc)
        if fail_closed:
            return Screening(ScreenVerdict.REFUSE, f"{exc}", hook_failed=True)
        return Screening(ScreenVerdict.FLAG, f"not screened: {exc}", hook_failed=True)
