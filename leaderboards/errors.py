"""The one exception family of the core. Messages are written for the user and shown as they are.

``UserError`` is what a user got wrong (every surface shows it, e.g. as an ephemeral Discord reply or a CLI
error line); other ``KernelcupError``s are the platform's (database not ready, a worker that lost its lease).
No HTTP codes or Discord types here: each surface maps the classes it cares about. Every class carries a
machine-readable ``code`` (a stable name a program can branch on, e.g. ``file_too_large``) and, where one input
is to blame, the ``field`` that names it; surfaces show ``message`` and may pass ``code``/``field`` on.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from datetime import datetime
from typing import Any


def close_matches(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names nearest to a mistyped one (ignoring case), best first: for "did you mean …?" hints."""
    by_folded: dict[str, str] = {}
    for k in known:
        by_folded.setdefault(k.casefold(), k)
    return [by_folded[m] for m in difflib.get_close_matches(name.casefold(), list(by_folded), n=n, cutoff=0.6)]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'softmax'?`` (with a leading space) when a known name is close to ``name``, else ``""``."""
    matches = close_matches(name, known)
    return f" Did you mean {' or '.join(map(repr, matches))}?" if matches else ""


class KernelcupError(Exception):
    """Base of every error the core raises on purpose; ``str(error)`` is a message for people."""

    code: str = "platform_error"
    """A stable, machine-readable name of the error (overridden per class, or per instance)."""
    field: str | None = None
    """The input the error is about (``file``, ``devices``, ``leaderboard``, …), where one is."""

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if field is not None:
            self.field = field


class UserError(KernelcupError):
    """Something the user can fix; the message says what and how."""

    code = "bad_request"


class NotFound(UserError):
    code = "not_found"


class LeaderboardNotFound(NotFound):
    code = "leaderboard_not_found"

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        hint = did_you_mean(name, known or ())
        hint += f" Known leaderboards: {', '.join(sorted(known))}." if known else ""
        super().__init__(f"There is no leaderboard named {name!r}.{hint}", field="leaderboard")
        self.name = name


class SubmissionNotFound(NotFound):
    """No such submission, or (``mine=True``) none of the asker's: someone else's submission is answered exactly
    like a missing one, so ids say nothing about what exists."""

    code = "submission_not_found"

    def __init__(self, submission_id: int, *, mine: bool = False) -> None:
        of = " of yours" if mine else ""
        super().__init__(f"There is no submission #{submission_id}{of}.")
        self.submission_id = submission_id


class UserNotFound(NotFound):
    code = "user_not_found"


class LeaderboardClosed(UserError):
    code = "leaderboard_closed"

    def __init__(self, name: str, deadline: datetime) -> None:
        super().__init__(
            f"Leaderboard {name!r} closed on {deadline:%Y-%m-%d %H:%M} UTC; it no longer accepts submissions."
        )
        self.deadline = deadline


class LeaderboardPaused(UserError):
    code = "leaderboard_paused"

    def __init__(self, name: str) -> None:
        super().__init__(f"Leaderboard {name!r} is paused by the admins; submissions are not accepted right now.")


class DeviceNotAllowed(UserError):
    code = "device_not_allowed"

    def __init__(self, name: str, device: str | None, allowed: list[str]) -> None:
        choices = f"{', '.join(allowed)} (or 'all')"
        if device is None:  # none given, and the leaderboard has several
            message = (
                f"Name a device of leaderboard {name!r}: give it as `devices` (on the command line, -d/--device NAME), "
                f"one of: {choices}."
            )
        else:
            message = f"Leaderboard {name!r} does not run on {device!r}; choose one of: {choices}."
        super().__init__(message, field="devices")


class InvalidSubmission(UserError):
    """Wrong file type, too large, empty, not text, wrong mode, a bad header directive; ``code`` says which."""

    code = "invalid_submission"
    field = "file"


def _bytes(n: int) -> str:
    """A size as people read it: bytes below 10 KiB (a limit of 100 bytes was "0 KiB"), KiB above."""
    return f"{n:,} bytes" if n < 10 * 1024 else f"{n / 1024:,.0f} KiB"


class FileTooLarge(InvalidSubmission):
    """A submission file over ``KERNELCUP_MAX_SUBMISSION_BYTES``; surfaces raise it from the file's size before
    reading it, the service from its content."""

    code = "file_too_large"

    def __init__(self, name: str, size: int, limit: int) -> None:
        shown = (_bytes(size), _bytes(limit))
        if shown[0] == shown[1]:  # just over the limit: a rounding that reads as "at the limit" says nothing
            shown = (f"{size:,} bytes", f"{limit:,} bytes")
        super().__init__(f"{name} is {shown[0]}; the limit is {shown[1]}.")
        self.size = size
        self.limit = limit


class RateLimited(UserError):
    code = "rate_limited"

    def __init__(self, message: str, retry_at: datetime, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_at = retry_at


class Banned(UserError):
    code = "banned"

    def __init__(self, reason: str | None = None) -> None:
        why = f" Reason: {reason}" if reason else ""
        super().__init__(f"You are banned from submitting.{why}")


class PermissionDenied(UserError):
    code = "forbidden"


class InvalidToken(UserError):
    """No token, or one that is unknown, expired or revoked: the message says which and how to get a new one."""

    code = "invalid_token"


class MissingScope(PermissionDenied):
    """A valid token without the scope an operation needs."""

    code = "missing_scope"


class AlreadyExists(UserError):
    code = "already_exists"


class InvalidChange(UserError):
    """An admin change that is not allowed as asked (bad value, or incomparable scores without --force)."""

    code = "invalid_change"


class AlreadyFinished(InvalidChange):
    """A cancel of a submission whose jobs have all finished: nothing to cancel (deleting it is another request)."""

    code = "already_finished"


class NeedsForce(InvalidChange):
    code = "needs_force"

    def __init__(self, name: str, reasons: list[str]) -> None:
        super().__init__(
            f"Updating leaderboard {name!r} would make existing scores incomparable ({'; '.join(reasons)}). "
            "Re-run with --force to apply it and reset the ranking."
        )
        self.reasons = reasons


class LiveChangeNeedsForce(NeedsForce):
    """A rename, or a deadline moved into the past, of a leaderboard with queued or running jobs or ranked entries:
    the message says what it affects (``impact``, a ``results.LiveImpact``); it applies only when forced."""

    def __init__(self, name: str, what: str, impact: Any) -> None:
        InvalidChange.__init__(
            self,
            f"Not applied: {what} of leaderboard {name!r} while it is live would affect {impact.text()}. "
            "Apply it with force to go ahead (the CLI's --force, the API's \"force\": true, the confirmation on "
            "the admin page, or force: True in Discord).",
        )
        self.reasons = [f"{what} affects {impact.text()}"]
        self.impact = impact


class DatabaseNotReady(KernelcupError):
    """The database cannot be reached or its schema is behind; the message says which command fixes it."""

    code = "database_unavailable"


class DatabaseUnreachable(DatabaseNotReady):
    """The database server did not answer (down, restarting, network blocked): worth waiting for."""


class LeaseLost(KernelcupError):
    """A worker tried to store a result for a job it no longer holds (lease expired, job cancelled)."""

    code = "lease_lost"

    def __init__(self, job_id: int, owner: str | None) -> None:
        super().__init__(f"job {job_id} is no longer held by {owner!r}; its result was not stored")
        self.job_id = job_id
