"""Moderation of entries (issue 29): a submission's state between "ranked" and "deleted".

```
  (none) ──flag──> flagged ──quarantine──> quarantined ──hacked──> hacked
     │                │                         │                     │
     └──quarantine────┼─────────────────────────┘                     │
                      └──────clear──────> cleared <───────clear───────┘
```

- **flagged**: someone (a moderator, the screening hook, the ranked score's pooling) thinks an admin should look.
  A flagged entry still ranks.
- **quarantined**: held out of every ranking (live board, final standings, announcements) while an admin looks.
- **hacked**: judged a cheat; stays out of every ranking.
- **cleared**: looked at and found fine; ranks again (a cleared entry may be flagged or quarantined again, by a
  moderator: an input hack only flags it). Clearing an entry an input hack quarantined withdraws the hacker's credit
  and the refund of that hack's unit (``withdraw_credits``).

Every change records who, when and why on the submission (the author sees the state and the reason in their own
view) and in the audit log. The ranking rows of the author are rebuilt in the same transaction, so the entry leaves
or rejoins the board at once (``ranking.rebuild``; ``ranking._eligible`` leaves out :data:`EXCLUDED` states).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboards import ranking
from leaderboards.errors import InvalidChange, InvalidSubmission
from leaderboards.models import AuditLog, Hack, Leaderboard, Submission, User
from leaderboards.moderation_states import ALLOWED_FROM, ModerationState, ranks
from leaderboards.results import UserRef
from leaderboards.screening import SCREENING_ACTOR, Screening, ScreenRequest, ScreenVerdict, screen, screener_from
from leaderboards.service_base import ServiceBase
from leaderboards.thaw import thaw_missing

MAX_REASON = 1000
"""Longest reason kept (it is shown to the author)."""
MAX_LIST = 500


def parse_state(text: str) -> ModerationState:
    try:
        return ModerationState(text.strip().lower())
    except ValueError:
        choices = ", ".join(s.value for s in ModerationState)
        raise InvalidChange(f"Unknown moderation state {text!r}; choose one of: {choices}.") from None


@dataclass(frozen=True)
class ModerationView:
    """A moderated entry as admins see it (the author sees ``state`` and ``reason`` in their own view)."""

    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    state: str
    reason: str
    by: str
    at: datetime


def _view(sub: Submission, board: str, user: str) -> ModerationView:
    assert sub.moderation is not None and sub.moderated_at is not None
    return ModerationView(
        sub.id, board, user, sub.file_name, sub.moderation, sub.moderation_reason or "", sub.moderated_by or "",
        sub.moderated_at,
    )  # fmt: skip


def flag_unmoderated(s: Session, sub: Submission, *, actor: str, reason: str, now: datetime) -> bool:
    """Flag ``sub`` when no one moderated it yet (the screening hook, the pooling): a machine never overwrites a
    moderator's verdict. Whether it flagged it."""
    if sub.moderation is not None:
        return False
    set_state(s, sub, ModerationState.FLAGGED, actor=actor, reason=reason, now=now)
    return True


def set_state(
    s: Session, sub: Submission, state: ModerationState, *, actor: str, reason: str, now: datetime
) -> str | None:
    """Move ``sub`` to ``state`` (checked against ``ALLOWED_FROM``), audit it, and rebuild its author's ranking rows
    when it leaves or rejoins the rankings. Returns the state it had."""
    reason = reason.strip()[:MAX_REASON]
    if not reason:
        raise InvalidChange("Say why (a reason): the author reads it, and the audit log keeps it.")
    before = sub.moderation
    if before not in ALLOWED_FROM[state]:
        allowed = [k.value for k, sources in ALLOWED_FROM.items() if before in sources]
        now_text = before or "not moderated"
        raise InvalidChange(
            f"Submission {sub.id} is {now_text}; it can become {' or '.join(allowed) or 'nothing else'}, "
            f"not {state.value}."
        )
    sub.moderation, sub.moderation_reason, sub.moderated_by, sub.moderated_at = state.value, reason, actor, now
    s.add(sub)
    lb = s.get(Leaderboard, sub.leaderboard_id)
    assert lb is not None
    detail = {"from": before, "to": state.value, "reason": reason, "leaderboard": lb.name}
    s.add(AuditLog(actor=actor, action="moderate", target=f"submission:{sub.id}", detail=detail, created_at=now))
    if ranks(before) != ranks(state.value):
        s.flush()
        ranking.rebuild(s, lb, user_id=sub.user_id)
        thaw_missing(s, sub.user_id, [lb.id], actor=actor, why=f"submission {sub.id} {state.value}")
    return before


QUARANTINED_BY_HACK = "quarantined"
"""An input hack's outcome ``action`` (``leaderboards/board_hacks.py``) of a confirmed break that quarantined the
entry: it credits the hacker and refunds the hack's unit."""
WITHDRAWN_BY_CLEAR = "withdrawn"
"""The ``action`` of such an outcome once a moderator cleared the entry: no credit, no refund."""


def credited(outcome: dict[str, Any]) -> bool:
    """Whether an input hack's entry outcome credits the hacker (a confirmed break that quarantined it, not withdrawn;
    an outcome stored before ``action`` existed: its ``broken``)."""
    action = outcome.get("action", QUARANTINED_BY_HACK if outcome.get("broken") else "")
    return str(action) == QUARANTINED_BY_HACK


def withdraw_credits(s: Session, sub: Submission) -> list[int]:
    """A moderator cleared ``sub``: the credits of the input hacks that quarantined it are withdrawn (and with them
    the refund of their units). The ids of the hacks changed. Here, not in ``board_hacks``, which imports this."""
    changed = []
    hacks = s.scalars(
        select(Hack).where(Hack.leaderboard_id == sub.leaderboard_id, Hack.status == "done", Hack.broken > 0)
    ).all()
    for hack in hacks:
        outcomes = [dict(o) for o in hack.outcomes or []]
        hit = False
        for o in outcomes:
            if int(o["submission_id"]) == sub.id and credited(o):
                o["action"], hit = WITHDRAWN_BY_CLEAR, True
        if hit:
            hack.outcomes = outcomes  # a new list: the JSON column sees the change
            hack.broken = sum(1 for o in outcomes if credited(o))
            changed.append(hack.id)
    return changed


class ModerationMixin(ServiceBase):
    """Admins' moderation of entries; the permission check is the surfaces'."""

    def moderate(self, submission_id: int, state: ModerationState | str, *, actor: str, reason: str) -> ModerationView:
        """Set a submission's moderation state (``InvalidChange`` naming the allowed ones when it cannot)."""
        target = state if isinstance(state, ModerationState) else parse_state(state)
        with self.db.transaction() as s:
            sub = self._submission(s, submission_id)
            s.execute(select(Leaderboard.id).where(Leaderboard.id == sub.leaderboard_id).with_for_update())
            before = set_state(s, sub, target, actor=actor, reason=reason, now=self.clock())
            if target is ModerationState.CLEARED and before != ModerationState.CLEARED:
                withdrawn = withdraw_credits(s, sub)
                if withdrawn:
                    self._audit(s, actor, "hack_credit_withdrawn", sub.leaderboard.name, submission=sub.id,
                                hacks=withdrawn)  # fmt: skip
            return _view(sub, sub.leaderboard.name, sub.user.name)

    def moderated(
        self, *, leaderboard: str | None = None, state: ModerationState | str | None = None, limit: int = 100
    ) -> tuple[ModerationView, ...]:
        """Moderated entries, newest change first (all states, or one), at most ``limit`` (1-500)."""
        if not 1 <= limit <= MAX_LIST:
            raise InvalidChange(f"limit must be from 1 to {MAX_LIST}, not {limit}.")
        wanted = parse_state(state) if isinstance(state, str) else state
        with self.db.transaction() as s:
            stmt = (
                select(Submission, Leaderboard.name, User.name)
                .join(Leaderboard, Leaderboard.id == Submission.leaderboard_id)
                .join(User, User.id == Submission.user_id)
                .where(Submission.moderation.is_not(None), Submission.deleted.is_(False))
            )
            if leaderboard is not None:
                stmt = stmt.where(Submission.leaderboard_id == self._leaderboard(s, leaderboard).id)
            if wanted is not None:
                stmt = stmt.where(Submission.moderation == wanted.value)
            rows = s.execute(stmt.order_by(Submission.moderated_at.desc(), Submission.id.desc()).limit(limit)).all()
            return tuple(_view(sub, board, user) for sub, board, user in rows)

    def _screen(self, user: UserRef, leaderboard: str, file_name: str, mode: str, content: bytes) -> Screening | None:
        """The screening hook's verdict on a submission about to be stored (None without a hook); a refusal is raised
        as ``InvalidSubmission`` with the hook's reason."""
        screener = screener_from(self.settings)
        if screener is None:
            return None
        request = ScreenRequest(leaderboard, file_name, mode, user.name, content.decode("utf-8", "replace"))
        verdict = screen(screener, request, fail_closed=self.settings.screen_fail_closed)
        if verdict.verdict is not ScreenVerdict.REFUSE:
            return verdict
        if verdict.hook_failed:
            raise InvalidSubmission(
                f"This server checks every submission before queueing it, and the check is not answering now "
                f"({verdict.reason}). Nothing is wrong with your file as far as we know: submit it again later.",
                code="screening_unavailable",
            )
        why = verdict.reason or "no reason given"
        raise InvalidSubmission(
            f"This submission was refused by the server's screening check: {why}. Change the file and submit again, "
            "or ask an admin if you think this is a mistake.",
            code="refused_by_screening",
        )

    def _flag_screened(self, s: Session, sub: Submission, screening: Screening | None) -> None:
        """Flag a just stored submission the screening hook flagged (or could not screen)."""
        if screening is not None and screening.verdict is ScreenVerdict.FLAG:
            reason = screening.reason or "flagged by the screening check"
            flag_unmoderated(s, sub, actor=SCREENING_ACTOR, reason=reason, now=self.clock())
