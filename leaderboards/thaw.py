"""Thawing frozen final standings when a person's best entry is not the one they hold (issue 29; red teams of
2026-11-29).

Final standings are frozen once per device, and read again with the entries that no longer rank left out
(``competition.moderated_out``: a ban). A person's best entry can change after the freeze in ways a read cannot
follow: a late entry an admin admitted, an entry back from a quarantine, the entry of a user unbanned since, or their
frozen best quarantined, judged hacked or deleted while an older entry of theirs still ranks. Wherever one person's
ranking rows are rebuilt after such a change, ``thaw_missing`` deletes the frozen standings of each device where that
person's best entry is neither ranked nor listed as left out there; the deadline's housekeeping (``competition_tick``)
freezes them again, with the entry's system test first where the problem has held-out cases. Each thaw is audited
(``thaw_standings``). The caller holds the board's row lock, as a freeze does, so the two never interleave.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from leaderboards.models import AuditLog, BestScore, FinalStanding, Leaderboard


def thaw_missing(
    s: Session, user_id: int, leaderboard_ids: Iterable[int] | None = None, *, actor: str, why: str
) -> list[tuple[int, str]]:
    """Delete each frozen final standing (of ``leaderboard_ids``, or every board) where ``user_id``'s best entry on
    that device is neither ranked nor listed as left out, auditing each as ``actor`` with ``why``; the (leaderboard
    id, device) pairs thawed."""
    query = select(BestScore).where(BestScore.user_id == user_id)
    if leaderboard_ids is not None:
        query = query.where(BestScore.leaderboard_id.in_(list(leaderboard_ids)))
    thawed = []
    for best in s.scalars(query.order_by(BestScore.leaderboard_id, BestScore.device)):
        here = (FinalStanding.leaderboard_id == best.leaderboard_id, FinalStanding.device == best.device)
        frozen = s.scalar(select(FinalStanding).where(*here))
        if frozen is None:
            continue
        listed = {int(e["submission_id"]) for e in [*frozen.entries, *frozen.excluded]}
        if best.submission_id in listed:
            continue
        s.execute(delete(FinalStanding).where(*here))
        thawed.append((best.leaderboard_id, best.device))
        board = s.scalar(select(Leaderboard.name).where(Leaderboard.id == best.leaderboard_id))
        detail = {"device": best.device, "submission": best.submission_id, "why": why}
        s.add(AuditLog(actor=actor, action="thaw_standings", target=str(board), detail=detail))
    s.flush()
    return thawed
