"""Invite codes to hidden leaderboards (issue 29): an admin makes a code with a number of uses and an expiry; a user who
joins with it becomes a member, and the board is then visible to them as a public one is to everybody (list, task,
ranking, standings, submitting). Boards without the user's invite stay hidden exactly as before
(``ServiceBase._leaderboard``: "there is no leaderboard named …").

A code is a secret, like an API token: only its SHA-256 is stored, it is shown once to the admin who made it, never
logged or audited (the audit log names its id and prefix), and a code longer than ``MAX_CODE_CHARS`` is refused before
it is hashed. Every join whose code let nobody in (unknown, expired, used up, revoked) is counted for its user
(``invite_failures``); past ``KERNELCUP_INVITE_FAILURES_PER_HOUR`` in an hour, joining is refused until the oldest
leaves the hour, so guessing a code (128 random bits) is hopeless.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from leaderboards.errors import InvalidChange, NotFound, RateLimited, UserError
from leaderboards.models import BoardMember, Invite, InviteFailure, Leaderboard, User
from leaderboards.results import UserRef
from leaderboards.service_base import ServiceBase, hour_full_until

CODE_PREFIX = "kci_"
CODE_BYTES = 16
"""Random bytes in a code: 128 bits, 22 characters of URL-safe base64 after the prefix."""
MAX_CODE_CHARS = 64
"""The longest text a join accepts as a code (a real one is 26 characters); longer is refused before any look-up."""
SHOWN_PREFIX = 8
"""Characters of a code kept to recognise it in lists (the prefix and 4 random characters)."""
MAX_INVITE_USES = 10_000
MAX_INVITE_DAYS = 366


class InviteError(UserError):
    """A join that let nobody in: the message says why (unknown, expired, used up) and what to do."""

    code = "invalid_invite"


@dataclass(frozen=True)
class InviteView:
    """An invite as admins see it: never the code."""

    invite_id: int
    leaderboard: str
    prefix: str
    max_uses: int
    uses: int
    expires_at: datetime | None
    created_by: str
    created_at: datetime
    revoked_at: datetime | None


@dataclass(frozen=True)
class NewInvite:
    code: str
    """The code itself: shown this once, stored only as its hash."""
    invite: InviteView


@dataclass(frozen=True)
class Joined:
    leaderboard: str
    already: bool
    """The user was a member before: no use of the code was spent."""


@dataclass(frozen=True)
class MemberView:
    """Someone let into a hidden leaderboard, as admins see them: who, when, and how (which invite, by its id and
    prefix, or an admin's hand); never a code."""

    leaderboard: str
    user: str
    """Their identity (``discord:<id>`` or ``local:<name>``): what ``remove_member`` and ``add_member`` take."""
    user_name: str
    joined_at: datetime
    invite_id: int | None
    invite_prefix: str | None
    """None with ``invite_id``: an admin added them (the audit log's ``add_member`` row says who and why)."""


def member_via(invite_id: int | None, invite_prefix: str | None) -> str:
    """How a member got in, in words every surface uses: "invite #3 (kci_AbCd…)" or "added by an admin"."""
    return f"invite #{invite_id} ({invite_prefix}…)" if invite_id is not None else "added by an admin"


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def _view(invite: Invite, board: str) -> InviteView:
    return InviteView(
        invite.id,
        board,
        invite.prefix,
        invite.max_uses,
        invite.uses,
        invite.expires_at,
        invite.created_by,
        invite.created_at,
        invite.revoked_at,
    )


class InvitesMixin(ServiceBase):
    """Make, list and revoke invite codes (admins); join a hidden leaderboard with one (anyone signed in)."""

    def create_invite(
        self, leaderboard: str, *, actor: str, uses: int = 1, expires_in: timedelta | None = timedelta(days=7)
    ) -> NewInvite:
        """A new code to the hidden ``leaderboard`` for ``uses`` joins (1 to ``MAX_INVITE_USES``), valid for
        ``expires_in`` (at most ``MAX_INVITE_DAYS`` days; None: until revoked). Audited without the code."""
        if isinstance(uses, bool) or not 1 <= uses <= MAX_INVITE_USES:
            raise InvalidChange(f"An invite is good for 1 to {MAX_INVITE_USES} joins, not {uses!r}.", field="uses")
        if expires_in is not None and not timedelta(minutes=1) <= expires_in <= timedelta(days=MAX_INVITE_DAYS):
            raise InvalidChange(
                f"An invite expires after 1 minute to {MAX_INVITE_DAYS} days (or never); not {expires_in}.",
                field="expires",
            )
        now = self.clock()
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard)
            if lb.visible:
                raise InvalidChange(
                    f"Leaderboard {lb.name!r} is public: everyone can see and enter it without a code. Hide it first "
                    "(visible: false), then invite people to it.",
                    field="leaderboard",
                )
            code = CODE_PREFIX + secrets.token_urlsafe(CODE_BYTES)
            invite = Invite(
                leaderboard_id=lb.id,
                code_hash=code_hash(code),
                prefix=code[:SHOWN_PREFIX],
                max_uses=uses,
                uses=0,
                expires_at=now + expires_in if expires_in is not None else None,
                created_by=actor,
                created_at=now,
            )
            s.add(invite)
            s.flush()
            self._audit(
                s, actor, "create_invite", lb.name, invite_id=invite.id, prefix=invite.prefix, uses=uses,
                expires_at=invite.expires_at.isoformat() if invite.expires_at else None,
            )  # fmt: skip
            return NewInvite(code, _view(invite, lb.name))

    def list_invites(self, leaderboard: str | None = None) -> tuple[InviteView, ...]:
        """Every invite (of one leaderboard, given one), newest first; never a code."""
        with self.db.transaction() as s:
            stmt = select(Invite, Leaderboard.name).join(Leaderboard, Leaderboard.id == Invite.leaderboard_id)
            if leaderboard is not None:
                stmt = stmt.where(Invite.leaderboard_id == self._leaderboard(s, leaderboard).id)
            return tuple(_view(i, name) for i, name in s.execute(stmt.order_by(Invite.id.desc())))

    def revoke_invite(self, invite_id: int, *, actor: str) -> InviteView:
        """No more joins with this code (members who joined with it stay members)."""
        with self.db.transaction() as s:
            row = s.execute(
                select(Invite, Leaderboard.name)
                .join(Leaderboard, Leaderboard.id == Invite.leaderboard_id)
                .where(Invite.id == invite_id)
            ).first()
            if row is None:
                raise NotFound(f"There is no invite #{invite_id}; `kernelcup invites list` shows them.")
            invite, board = row
            if invite.revoked_at is None:
                invite.revoked_at = self.clock()
                self._audit(s, actor, "revoke_invite", board, invite_id=invite.id, prefix=invite.prefix)
            return _view(invite, board)

    def board_members(self, leaderboard: str) -> tuple[MemberView, ...]:
        """Who may see the hidden ``leaderboard`` besides admins: its members, earliest first, each with the invite
        they joined by (or none: an admin added them). For admins only: surfaces check the role."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard)
            rows = s.execute(
                select(BoardMember, User, Invite.prefix)
                .join(User, User.id == BoardMember.user_id)
                .outerjoin(Invite, Invite.id == BoardMember.invite_id)
                .where(BoardMember.leaderboard_id == lb.id)
                .order_by(BoardMember.joined_at, BoardMember.id)
            )
            return tuple(
                MemberView(lb.name, u.identity, u.name, m.joined_at, m.invite_id, prefix) for m, u, prefix in rows
            )

    def add_member(self, leaderboard: str, user: UserRef, *, actor: str, reason: str = "") -> MemberView:
        """Let ``user`` into the hidden ``leaderboard`` without a code (an admin's hand, audited as ``add_member``).
        A member already is left as they are."""
        now = self.clock()
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard)
            if lb.visible:
                raise InvalidChange(
                    f"Leaderboard {lb.name!r} is public: everyone sees it already. Hide it first (visible: false).",
                    field="leaderboard",
                )
            u = s.scalar(select(User).where(User.identity == user.identity)) or self._user(s, user)
            member = s.scalar(
                select(BoardMember).where(BoardMember.leaderboard_id == lb.id, BoardMember.user_id == u.id)
            )
            if member is None:
                member = BoardMember(leaderboard_id=lb.id, user_id=u.id, invite_id=None, joined_at=now)
                s.add(member)
                s.flush()
                self._audit(s, actor, "add_member", lb.name, user=u.identity, reason=reason)
            prefix = s.scalar(select(Invite.prefix).where(Invite.id == member.invite_id)) if member.invite_id else None
            return MemberView(lb.name, u.identity, u.name, member.joined_at, member.invite_id, prefix)

    def remove_member(self, leaderboard: str, user: UserRef, *, actor: str, reason: str = "") -> MemberView:
        """Take ``user`` out of the hidden ``leaderboard``: it is hidden from them again (their submissions stay, and
        rank as before). Audited as ``remove_member``. A user who is no member is told apart (``NotFound``)."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard)
            row = s.execute(
                select(BoardMember, User, Invite.prefix)
                .join(User, User.id == BoardMember.user_id)
                .outerjoin(Invite, Invite.id == BoardMember.invite_id)
                .where(BoardMember.leaderboard_id == lb.id, User.identity == user.identity)
            ).first()
            if row is None:
                raise NotFound(
                    f"{user.name!r} is no member of {lb.name!r}; `kernelcup invites members {lb.name}` lists them."
                )
            member, u, prefix = row
            view = MemberView(lb.name, u.identity, u.name, member.joined_at, member.invite_id, prefix)
            s.delete(member)
            self._audit(s, actor, "remove_member", lb.name, user=u.identity, reason=reason)
            return view

    def join(self, user: UserRef, code: str) -> Joined:
        """Let ``user`` into the hidden leaderboard ``code`` invites to, spending one of its uses (none when they are
        a member already). A code that lets nobody in raises ``InviteError`` saying why, and counts against the
        user's hourly allowance of failed joins (``RateLimited`` once it is spent, before the code is looked at)."""
        code = code.strip()
        now = self.clock()
        with self.db.transaction() as s:
            u = self._user(s, user)
            self._check_guessing(s, u.id, now)
            why = self._join(s, u.id, u.identity, code, now)
            if isinstance(why, Joined):
                return why
            s.add(InviteFailure(user_id=u.id, created_at=now))  # kept: the transaction commits, then the refusal
        raise InviteError(why, field="code")

    def _join(self, s: Session, user_id: int, identity: str, code: str, now: datetime) -> Joined | str:
        """The membership made, or why the code lets nobody in (the failure is then counted by the caller)."""
        if not code:
            return "Give the invite code (it starts with kci_)."
        if len(code) > MAX_CODE_CHARS:
            return f"That is no invite code (codes have at most {MAX_CODE_CHARS} characters); paste the one you got."
        invite = s.scalar(select(Invite).where(Invite.code_hash == code_hash(code)).with_for_update())
        if invite is None:
            return "That invite code is unknown: check it for typos, or ask the organiser for a new one."
        lb = s.get(Leaderboard, invite.leaderboard_id)
        assert lb is not None  # (invites go with their leaderboard)
        member = s.scalar(
            select(BoardMember.id).where(BoardMember.leaderboard_id == lb.id, BoardMember.user_id == user_id)
        )
        if member is not None:
            return Joined(lb.name, already=True)
        if invite.revoked_at is not None:
            return "That invite code was withdrawn by the organisers; ask them for a new one."
        if invite.expires_at is not None and now >= invite.expires_at:
            return f"That invite code expired on {invite.expires_at:%Y-%m-%d %H:%M} UTC; ask the organiser for another."
        # One statement that spends a use only while one is left: two joins at once cannot both take the last.
        spent = s.scalar(
            update(Invite)
            .where(Invite.id == invite.id, Invite.uses < Invite.max_uses)
            .values(uses=Invite.uses + 1)
            .returning(Invite.id)
        )
        if spent is None:
            return f"That invite code was used {invite.max_uses} times, all it allows; ask the organiser for another."
        s.add(BoardMember(leaderboard_id=lb.id, user_id=user_id, invite_id=invite.id, joined_at=now))
        self._audit(s, identity, "join", lb.name, invite_id=invite.id, prefix=invite.prefix)
        return Joined(lb.name, already=False)

    def _check_guessing(self, s: Session, user_id: int, now: datetime) -> None:
        limit = self.settings.invite_failures_per_hour
        failures = select(InviteFailure.created_at).where(InviteFailure.user_id == user_id)
        retry_at = hour_full_until(s, failures, InviteFailure.created_at, limit, now)
        if retry_at is None:
            return
        raise RateLimited(
            f"{limit} joins with codes that let nobody in within the hour: try again after {retry_at:%H:%M:%S} UTC, "
            "with the code exactly as you were given it.",
            retry_at,
        )
