"""The one exception family of the core. Messages are written for the user and shown as they are.

``UserError`` is what a user got wrong (every surface shows it, e.g. as an ephemeral Discord reply or a CLI
error line); other ``KernelcupError``s are the platform's (database not ready, a worker that lost its lease).
No HTTP codes or Discord types here: each surface maps the classes it cares about.
"""

from __future__ import annotations

from datetime import datetime


class KernelcupError(Exception):
    """Base of every error the core raises on purpose; ``str(error)`` is a message for people."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UserError(KernelcupError):
    """Something the user can fix; the message says what and how."""


class NotFound(UserError):
    pass


class LeaderboardNotFound(NotFound):
    def __init__(self, name: str, known: list[str] | None = None) -> None:
        hint = f" Known leaderboards: {', '.join(sorted(known))}." if known else ""
        super().__init__(f"There is no leaderboard named {name!r}.{hint}")
        self.name = name


class SubmissionNotFound(NotFound):
    def __init__(self, submission_id: int) -> None:
        super().__init__(f"There is no submission #{submission_id}.")
        self.submission_id = submission_id


class UserNotFound(NotFound):
    pass


class LeaderboardClosed(UserError):
    def __init__(self, name: str, deadline: datetime) -> None:
        super().__init__(
            f"Leaderboard {name!r} closed on {deadline:%Y-%m-%d %H:%M} UTC; it no longer accepts submissions."
        )
        self.deadline = deadline


class LeaderboardPaused(UserError):
    def __init__(self, name: str) -> None:
        super().__init__(f"Leaderboard {name!r} is paused by the admins; submissions are not accepted right now.")


class DeviceNotAllowed(UserError):
    def __init__(self, name: str, device: str, allowed: list[str]) -> None:
        super().__init__(f"Leaderboard {name!r} does not run on {device!r}; choose one of: {', '.join(allowed)}.")


class InvalidSubmission(UserError):
    """Wrong file type, too large, empty, not text, wrong mode."""


class FileTooLarge(InvalidSubmission):
    """A submission file over ``KERNELCUP_MAX_SUBMISSION_BYTES``; surfaces raise it from the file's size before
    reading it, the service from its content."""

    def __init__(self, name: str, size: int, limit: int) -> None:
        super().__init__(f"{name} is {size / 1024:.0f} KiB; the limit is {limit / 1024:.0f} KiB.")
        self.size = size
        self.limit = limit


class RateLimited(UserError):
    def __init__(self, message: str, retry_at: datetime) -> None:
        super().__init__(message)
        self.retry_at = retry_at


class Banned(UserError):
    def __init__(self, reason: str | None = None) -> None:
        why = f" Reason: {reason}" if reason else ""
        super().__init__(f"You are banned from submitting.{why}")


class PermissionDenied(UserError):
    pass


class AlreadyExists(UserError):
    pass


class InvalidChange(UserError):
    """An admin change that is not allowed as asked (bad value, or incomparable scores without --force)."""


class NeedsForce(InvalidChange):
    def __init__(self, name: str, reasons: list[str]) -> None:
        super().__init__(
            f"Updating leaderboard {name!r} would make existing scores incomparable ({'; '.join(reasons)}). "
            "Re-run with --force to apply it and reset the ranking."
        )
        self.reasons = reasons


class DatabaseNotReady(KernelcupError):
    """The database cannot be reached or its schema is behind; the message says which command fixes it."""


class DatabaseUnreachable(DatabaseNotReady):
    """The database server did not answer (down, restarting, network blocked): worth waiting for."""


class LeaseLost(KernelcupError):
    """A worker tried to store a result for a job it no longer holds (lease expired, job cancelled)."""

    def __init__(self, job_id: int, owner: str | None) -> None:
        super().__init__(f"job {job_id} is no longer held by {owner!r}; its result was not stored")
        self.job_id = job_id
