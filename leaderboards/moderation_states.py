"""The moderation states of an entry and which of them rank (``leaderboards/moderation.py`` changes them). Apart so
that ``leaderboards/ranking.py`` can leave excluded entries out without importing the moderation service."""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import ColumnElement, or_

from leaderboards.models import Submission


class ModerationState(StrEnum):
    FLAGGED = "flagged"
    QUARANTINED = "quarantined"
    HACKED = "hacked"
    CLEARED = "cleared"


EXCLUDED = (ModerationState.QUARANTINED.value, ModerationState.HACKED.value)
"""States whose entries rank nowhere."""

ALLOWED_FROM: dict[ModerationState, tuple[str | None, ...]] = {
    ModerationState.FLAGGED: (None, ModerationState.CLEARED),
    ModerationState.QUARANTINED: (None, ModerationState.FLAGGED, ModerationState.CLEARED),
    ModerationState.HACKED: (ModerationState.FLAGGED, ModerationState.QUARANTINED),
    ModerationState.CLEARED: (ModerationState.FLAGGED, ModerationState.QUARANTINED, ModerationState.HACKED),
}
"""Which state each state may be reached from (``None``: never moderated)."""


def ranks(state: str | None) -> bool:
    """Whether an entry in ``state`` may rank."""
    return state not in EXCLUDED


def ranks_condition() -> ColumnElement[bool]:
    """SQL: the submission's moderation lets it rank."""
    return or_(Submission.moderation.is_(None), Submission.moderation.not_in(EXCLUDED))


def author_text(state: str | None, reason: str | None) -> str | None:
    """What the author reads about their entry's moderation, None when there is nothing to say."""
    if state is None:
        return None
    why = f": {reason}" if reason else ""
    if state == ModerationState.FLAGGED:
        return f"flagged for a moderator to look at (it still ranks){why}"
    if state == ModerationState.QUARANTINED:
        return f"quarantined: out of every ranking while a moderator looks{why}"
    if state == ModerationState.HACKED:
        return f"judged a hack by a moderator: out of every ranking{why}"
    return f"cleared by a moderator: it ranks{why}"
