"""Thawing frozen final standings when an entry that ranks is missing from them (issue 29; a red team, 2026-11-29).

Final standings are frozen once per device and read again with the entries that no longer rank left out
(``competition.moderated_out``). The other way round needs a thaw: an entry that ranks now but was not ranked when they
froze (a late entry an admin admitted, an entry back from a quarantine, the entry of a user unbanned since) would
otherwise stay missing for good while the live ranking shows it. Its device's frozen standings are deleted; the
deadline's housekeeping (``competition_tick``) freezes them again with it, after its system test where the problem
has held-out cases. The callers audit what was thawed.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from leaderboards.models import BestScore, FinalStanding


def thaw_missing(s: Session, user_id: int, leaderboard_ids: Iterable[int] | None = None) -> list[tuple[int, str]]:
    """Delete each frozen final standing (of ``leaderboard_ids``, or every board) where ``user_id``'s best entry on
    that device is neither ranked nor listed as left out; the (leaderboard id, device) pairs thawed."""
    query = select(BestScore).where(BestScore.user_id == user_id)
    if leaderboard_ids is not None:
        query = query.where(BestScore.leaderboard_id.in_(list(leaderboard_ids)))
    thawed = []
    for best in s.scalars(query):
        here = (FinalStanding.leaderboard_id == best.leaderboard_id, FinalStanding.device == best.device)
        frozen = s.scalar(select(FinalStanding).where(*here))
        if frozen is None:
            continue
        listed = {int(e["submission_id"]) for e in [*frozen.entries, *frozen.excluded]}
        if best.submission_id not in listed:
            s.execute(delete(FinalStanding).where(*here))
            thawed.append((best.leaderboard_id, best.device))
    s.flush()
    return thawed
