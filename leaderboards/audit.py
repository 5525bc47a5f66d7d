"""The audit log, readable (issue 29): who did what, when, filtered and paged, newest first.

Every admin act and every moderation, rejudge, alert and runtime change writes an ``audit_log`` row
(``ServiceBase._audit``). Admins read them through ``GET /api/v1/admin/audit``, the admin page and ``/admin audit``.
Nothing secret is stored in a row on purpose, and whatever a detail holds under a secret's name (a seed, a token, a
code, held-out cases) is withheld when read, so no surface can show one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select

from leaderboards.errors import InvalidChange
from leaderboards.models import AuditLog
from leaderboards.service_base import ServiceBase

MAX_PAGE = 200
WITHHELD = "[withheld]"
SECRET_KEYS = frozenset(
    {"secret", "secret_seed", "seed", "token", "api_token", "password", "code", "invite_code", "holdout", "content"}
)
"""Detail keys whose values are never shown (at any depth)."""


def withheld(value: Any) -> Any:
    """``value`` with every value under a :data:`SECRET_KEYS` key replaced by :data:`WITHHELD`."""
    if isinstance(value, dict):
        return {k: WITHHELD if str(k).lower() in SECRET_KEYS else withheld(v) for k, v in value.items()}
    if isinstance(value, list):
        return [withheld(v) for v in value]
    return value


@dataclass(frozen=True)
class AuditEntry:
    entry_id: int
    at: datetime
    actor: str
    action: str
    target: str
    detail: dict[str, Any]

    @property
    def text(self) -> str:
        """One line: '2031-01-01 12:00 discord:1 moderate submission:7 (to: quarantined, reason: ...)'."""
        shown = ", ".join(f"{k}: {v}" for k, v in self.detail.items() if v not in (None, "", [], {}))
        tail = f" ({shown[:300]})" if shown else ""
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}{tail}"


@dataclass(frozen=True)
class AuditPage:
    entries: tuple[AuditEntry, ...]
    next_before: int | None
    """Pass as ``before`` for the next (older) page; None on the last one."""


class AuditMixin(ServiceBase):
    def audit_log(
        self,
        *,
        actor: str | None = None,
        action: str | None = None,
        leaderboard: str | None = None,
        since: datetime | None = None,
        before: int | None = None,
        limit: int = 50,
    ) -> AuditPage:
        """Audit entries newest first, filtered (``leaderboard``: entries about it, by name as target or in their
        detail), at most ``limit`` (1-200) older than the entry id ``before``."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidChange(f"limit must be from 1 to {MAX_PAGE}, not {limit}.")
        if since is not None and since.tzinfo is None:
            raise InvalidChange("since needs a time zone (e.g. 2031-01-01T00:00:00Z).")
        stmt = select(AuditLog)
        if actor:
            stmt = stmt.where(AuditLog.actor == actor)
        if action:
            stmt = stmt.where(AuditLog.action == action)
        if leaderboard:
            stmt = stmt.where(
                or_(AuditLog.target == leaderboard, AuditLog.detail["leaderboard"].as_string() == leaderboard)
            )
        if since is not None:
            stmt = stmt.where(AuditLog.created_at >= since)
        if before is not None:
            stmt = stmt.where(AuditLog.id < before)
        with self.db.transaction() as s:
            rows = s.scalars(stmt.order_by(AuditLog.id.desc()).limit(limit + 1)).all()
        entries = tuple(
            AuditEntry(r.id, r.created_at, r.actor, r.action, r.target, withheld(dict(r.detail or {})))
            for r in rows[:limit]
        )
        return AuditPage(entries, entries[-1].entry_id if len(rows) > limit else None)
