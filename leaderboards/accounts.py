"""Accounts and API tokens: create, list, revoke, and authenticate a token.

A person has one user row whether they come from Discord, the CLI or the API. A token is random (256 bits),
shown once and stored only as its SHA-256 (the token is high-entropy, so a plain fast hash is as good as a slow
one and keeps a lookup to one indexed query); it carries scopes (``submit``, ``admin``), an optional expiry and a
last-used time, and can be revoked. An account can be marked as a program (``is_program``): programs get their
own rate limit and pending-job quota (``KERNELCUP_PROGRAM_*``) and rankings can leave them out.

Who may create tokens is the surfaces' check: ``/token`` in Discord for oneself (submit scope only), ``kernelcup
tokens`` in the server's shell for anyone (the way to the first admin token), ``POST /api/v1/me/tokens`` and a CLI
browser sign-in for oneself with a token (``made_with``).

Tokens lent to programs are held to what they were given (the GPU budgets of ``leaderboards/budgets.py``):

- A token with its own GPU budget makes no tokens (``BudgetedTokenMaker``, a 403): a fresh token would carry no
  budget, so minting one would escape it. Its owner makes tokens signed in on the web page (or with ``kernelcup
  login``) or in Discord, or asks an admin.
- A token made with another token (``api_tokens.made_with_token_id``), and a token with its own budget, revoke only
  themselves and the tokens made with them (``TokenNotYours``, a 403): a program's token cannot revoke the person's
  own. Any other token of the account (one the person made in Discord, the shell or a web sign-in) revokes any of
  its tokens.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from leaderboards.errors import InvalidChange, InvalidToken, MissingScope, NotFound, PermissionDenied, RateLimited
from leaderboards.models import ApiToken, GpuBudget, LinkedAccount, User, WebSession
from leaderboards.results import NewToken, Principal, Scope, TokenView, UserRef, UserView
from leaderboards.service_base import ServiceBase

TOKEN_PREFIX = "kc_"
TOKEN_BYTES = 32
"""256 bits of randomness per token."""
SHOWN_PREFIX = 10
"""Characters of a token kept in clear to recognise it in a list (``kc_`` + 7: 42 bits, useless to guess with)."""
LAST_USED_RESOLUTION_S = 60.0
"""``last_used_at`` is written at most this often per token, so reading with a token costs no write each time."""
MAX_LIFETIME = timedelta(days=36500)
"""The longest lifetime a person may write (100 years; beyond it, ask for 'never' where that is allowed)."""
OAUTH_VIAS = ("discord", "github")
"""Web sessions opened by a provider's sign-in (web/pages/oauth.py): their token was made for them, ends with them."""
CLI_CODE_VIA = "cli:"
"""``web_sessions.via`` of a CLI sign-in's one-time code (``cli:`` + how the approving session signed in): a code is
kept as a row of that table (its hash, the approving session's token, its expiry, ``ended_at`` once used), never a
session anyone can be signed in by."""
GET_A_TOKEN = "with /token in Discord, or on the server with `kernelcup tokens create NAME`"
"""How a person gets a token, in every message that asks for one: a deployment with the bot, or a local one without."""
MAX_TOKEN_CHAIN = 100
"""How far up ``made_with_token_id`` a revocation looks for the acting token (a chain is never this long)."""


class BudgetedTokenMaker(PermissionDenied):
    """A token with its own GPU budget tried to make a token (which would escape the budget)."""

    code = "budgeted_token"


class TokenNotYours(PermissionDenied):
    """A token made with another token (or with its own budget) tried to revoke a token not made with it."""

    code = "token_not_revocable"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_expiry(text: str) -> timedelta | None:
    """``90d``, ``12h``, ``30m``, ``2w`` (or a bare number of days) into a lifetime; ``never`` into None."""
    text = text.strip().lower()
    if text in ("never", "none", "0"):
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([mhdw]?)", text)
    if match is None:
        raise InvalidChange(f"{text!r} is not a lifetime; write it like 90d, 12h, 2w, or 'never'.", field="expires")
    value, unit = float(match.group(1)), match.group(2) or "d"
    unit_name = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[unit]
    try:
        lifetime = timedelta(**{unit_name: value})
    except OverflowError:
        lifetime = None
    if lifetime is None or lifetime > MAX_LIFETIME:
        raise InvalidChange(
            f"{text!r} is longer than a token may last ({MAX_LIFETIME.days} days at most); give a shorter lifetime "
            "like 90d or 365d.",
            field="expires",
        )
    return lifetime


def token_lifetime(text: str) -> tuple[timedelta | None, bool]:
    """``(expires_in, never_expires)`` for :meth:`create_token` from what a person wrote: nothing, the setting's
    default (``KERNELCUP_TOKEN_EXPIRY_DAYS``); ``never``, no expiry; else :func:`parse_expiry`'s lifetime."""
    if not text.strip():
        return None, False
    lifetime = parse_expiry(text)
    return lifetime, lifetime is None


def _scopes(scopes: Iterable[Scope | str]) -> tuple[Scope, ...]:
    chosen: list[Scope] = []
    for scope in scopes:
        try:
            value = Scope(str(scope).strip().lower())
        except ValueError:
            known = ", ".join(s.value for s in Scope)
            raise InvalidChange(f"Unknown scope {scope!r}; choose from: {known}.", field="scopes") from None
        if value not in chosen:
            chosen.append(value)
    if not chosen:
        raise InvalidChange("A token needs at least one scope (submit, admin).", field="scopes")
    return tuple(chosen)


class AccountsMixin(ServiceBase):
    """Token functions of ``LeaderboardService``."""

    def create_token(
        self,
        user: UserRef,
        *,
        name: str = "",
        scopes: Iterable[Scope | str] = (Scope.SUBMIT,),
        expires_in: timedelta | None = None,
        never_expires: bool = False,
        program: bool | None = None,
        made_with: Principal | None = None,
        actor: str = "",
    ) -> NewToken:
        """A new token for ``user`` (created if unknown). ``expires_in`` defaults to ``KERNELCUP_TOKEN_EXPIRY_DAYS``;
        ``program`` marks (True) or unmarks (False) the account as a program; None leaves it as it is.

        ``made_with``: the token a person makes this one with (the API's ``POST /me/tokens``). The new token never
        outlives it, nor (unless it is an admin's) the server's default lifetime: a longer lifetime is shortened to
        that, and ``never`` is refused; a token with its own GPU budget makes none (``BudgetedTokenMaker``). The new
        token records it (``made_with_token_id``: it may revoke only itself and the tokens made with it). Each user
        has at most ``KERNELCUP_MAX_TOKENS_PER_USER`` live tokens."""
        chosen = _scopes(scopes)
        if Scope.ADMIN in chosen and Scope.SUBMIT not in chosen:
            chosen = (Scope.SUBMIT, *chosen)  # an admin may do what any user may
        now = self.clock()
        if never_expires:
            expires_at = None
        elif expires_in is not None:
            if expires_in <= timedelta(0):
                raise InvalidChange("A token's lifetime must be positive.", field="expires")
            expires_at = now + expires_in
        else:
            days = self.settings.token_expiry_days
            expires_at = now + timedelta(days=days) if days else None
        if made_with is not None:
            expires_at = self._within(made_with, expires_at, now, asked_never=never_expires)
        token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        with self.db.transaction() as s:
            u = self._user(s, user)
            if made_with is not None:
                _refuse_budgeted_maker(s, made_with.token_id)
            self._check_token_count(s, u, now)
            if program is not None and u.is_program != program:
                u.is_program = program
                self._audit(s, actor or "system", "mark_program" if program else "unmark_program", u.identity)
            row = ApiToken(
                user_id=u.id,
                name=name[:100],
                token_hash=hash_token(token),
                prefix=token[:SHOWN_PREFIX],
                scopes=[sc.value for sc in chosen],
                created_by=(actor or user.identity)[:200],
                created_at=now,
                expires_at=expires_at,
                made_with_token_id=made_with.token_id if made_with is not None else None,
            )
            s.add(row)
            s.flush()
            self._audit(s, actor or user.identity, "create_token", u.identity, token_id=row.id, scopes=row.scopes)
            return NewToken(token=token, info=self._token_view(row, u))

    def list_tokens(self, user: UserRef | None = None, *, include_revoked: bool = False) -> tuple[TokenView, ...]:
        """Tokens of ``user`` (everyone's when None), newest first; revoked ones only when asked."""
        with self.db.transaction() as s:
            stmt = select(ApiToken, User).join(User, User.id == ApiToken.user_id).order_by(ApiToken.id.desc())
            if user is not None:
                stmt = stmt.where(User.identity == user.identity)
            if not include_revoked:
                stmt = stmt.where(ApiToken.revoked_at.is_(None))
            return tuple(self._token_view(t, u) for t, u in s.execute(stmt).all())

    def revoke_token(
        self, token_id: int, *, user: UserRef | None = None, by: Principal | None = None, actor: str = ""
    ) -> TokenView:
        """Revoke a token at once. With ``user``, only one of theirs (another's is ``NotFound``, like a missing one).
        With ``by`` (the token that asks, ``DELETE /me/tokens/ID``): a token made with another token, or with its own
        GPU budget, revokes only itself and the tokens made with it (``TokenNotYours``); see the module's text."""
        with self.db.transaction() as s:
            row = s.get(ApiToken, token_id, with_for_update={"of": ApiToken})
            if row is None or (user is not None and row.user.identity != user.identity):
                raise NotFound(f"There is no token #{token_id}{' of yours' if user is not None else ''}.")
            if by is not None and not _may_revoke(s, by.token_id, row):
                raise TokenNotYours(
                    f"This token (#{by.token_id}) was made with another token or has its own GPU budget: it may revoke "
                    f"only itself and the tokens made with it, not #{token_id}. Revoke #{token_id} with a token you "
                    "made yourself (signed in on the web page, `kernelcup login`, or /token in Discord), or ask an "
                    "admin."
                )
            if row.revoked_at is None:
                row.revoked_at = self.clock()
                self._audit(s, actor or "system", "revoke_token", row.user.identity, token_id=row.id)
            s.flush()
            return self._token_view(row, row.user)

    def authenticate(self, token: str | None, scope: Scope | None = Scope.SUBMIT) -> Principal:
        """Who ``token`` speaks for. ``InvalidToken`` when it is missing, unknown, expired or revoked (the message
        says which and how to get a new one); ``MissingScope`` when it lacks ``scope``."""
        if not token:
            raise InvalidToken(f"This needs an API token: send 'Authorization: Bearer <token>'. Get one {GET_A_TOKEN}.")
        now = self.clock()
        with self.db.transaction() as s:
            row = s.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token.strip())))
            if row is None:
                raise InvalidToken(f"This API token is not valid (mistyped, or deleted). Get a new one {GET_A_TOKEN}.")
            return self._principal(s, row, scope, now)

    # -- web sessions (docs/web.md) --------------------------------------------------------------------------------

    def open_session(self, token: str, *, via: str, max_age: timedelta) -> tuple[str, Principal]:
        """A web session for whoever ``token`` speaks for (``InvalidToken`` as :meth:`authenticate`): its id, for the
        cookie, and the principal. The id is no API token (only its hash is kept, in its own table); the session
        lasts ``max_age`` at most and never outlives its token. ``via='discord'``: the token was made for this
        session and is revoked with it."""
        who = self.authenticate(token, None)
        now = self.clock()
        expires_at = now + max_age if who.expires_at is None else min(now + max_age, who.expires_at)
        sid = secrets.token_urlsafe(TOKEN_BYTES)
        with self.db.transaction() as s:
            s.execute(delete(WebSession).where(WebSession.expires_at < now))  # sessions long over take no room
            s.add(WebSession(sid_hash=hash_token(sid), token_id=who.token_id, via=via[:16], expires_at=expires_at))
        return sid, who

    def session_principal(self, sid: str | None) -> Principal:
        """Whom the web session ``sid`` speaks for; ``InvalidToken`` once it was signed out or expired, or its token
        was revoked or expired."""
        now = self.clock()
        with self.db.transaction() as s:
            _, token = _live_session(s, sid, now)
            return self._principal(s, token, None, now)

    def end_session(self, sid: str | None, *, actor: str = "") -> None:
        """Sign out: the session ``sid`` ends at once (a copy of its cookie is no longer anyone); a Discord or
        GitHub sign-in's token, made for it, is revoked with it. Ending an unknown or ended session does nothing."""
        now = self.clock()
        with self.db.transaction() as s:
            row = s.scalar(select(WebSession).where(WebSession.sid_hash == hash_token(sid or "")))
            if row is None or row.ended_at is not None:
                return
            row.ended_at = now
            token = s.get(ApiToken, row.token_id) if row.via in OAUTH_VIAS else None
            if token is not None and token.revoked_at is None:
                token.revoked_at = now
                self._audit(s, actor or token.user.identity, "revoke_token", token.user.identity, token_id=token.id)

    # -- provider sign-ins (web/pages/oauth.py) -------------------------------------------------------------------

    def provider_account(self, ref: UserRef, *, link_to: Principal | None = None) -> UserRef:
        """The account a provider's sign-in as ``ref`` speaks for. A Discord account is always its own (the bot's
        ``discord:<id>``). A GitHub account is the account it was linked to, else its own ``github:<id>``.

        ``link_to``: link this GitHub account to that (signed-in) account first, audited (``link_account``); refused
        (``InvalidChange``) when the GitHub account already signs in as another account, its own or a linked one."""
        if ref.github_id is None:
            if link_to is not None:
                raise InvalidChange("Only a GitHub account can be linked to an account; sign in with it instead.")
            return ref
        subject = str(ref.github_id)
        with self.db.transaction() as s:
            link = s.scalar(
                select(LinkedAccount).where(LinkedAccount.provider == "github", LinkedAccount.subject == subject)
            )
            own = s.scalar(select(User).where(User.identity == ref.identity))
            if link_to is None:
                linked = s.get(User, link.user_id) if link is not None else None
                return user_ref(linked) if linked is not None else ref
            other = s.get(User, link.user_id) if link is not None else own
            if other is not None and other.id != link_to.user_id:
                whose = "is linked to" if link is not None else "already has"
                raise InvalidChange(
                    f"This GitHub account ({ref.name}) {whose} another kernelcup account, {other.name!r}; it can sign "
                    "in as one account only. Sign in with it to use that account, or ask an admin to merge them."
                )
            if link is None and own is None:
                s.add(LinkedAccount(user_id=link_to.user_id, provider="github", subject=subject))
                self._audit(s, link_to.user.identity, "link_account", link_to.user.identity, provider="github",
                            subject=subject, name=ref.name[:100])  # fmt: skip
            return link_to.user

    # -- the CLI's browser sign-in (kernelcup login --server URL; docs/deploy.md, "Sign-in") ----------------------

    def approve_cli_sign_in(self, sid: str | None, challenge: str, *, client: str, ttl: timedelta) -> str:
        """A one-time code for the CLI that asked with ``challenge`` (PKCE: the SHA-256 of a secret only that CLI
        holds), approved by the signed-in web session ``sid``; it can be exchanged once, within ``ttl``, by
        :meth:`redeem_cli_sign_in`. Only its hash with the challenge is kept. Audited (``approve_cli_sign_in``).
        ``InvalidToken`` when the session has ended."""
        now = self.clock()
        with self.db.transaction() as s:
            row, token = _live_session(s, sid, now)
            who = self._principal(s, token, None, now)
            code = secrets.token_urlsafe(TOKEN_BYTES)
            s.add(
                WebSession(
                    sid_hash=_code_hash(code, challenge),
                    token_id=token.id,
                    via=f"{CLI_CODE_VIA}{row.via}"[:16],
                    expires_at=now + ttl,
                )
            )
            self._audit(
                s, who.user.identity, "approve_cli_sign_in", who.user.identity, client=client[:100], session=row.via
            )
        return code

    def redeem_cli_sign_in(self, code: str, verifier: str, *, client: str) -> NewToken:
        """The API token a CLI gets for the code :meth:`approve_cli_sign_in` gave its browser, with the secret whose
        hash it asked with (``verifier``): once per code, before it expires, while the approving sign-in's token is
        still valid. The token has the submit scope only, whatever the approver's; its lifetime is the server's
        default, and never longer than the approver's token when that sign-in was a pasted token. ``InvalidToken``
        otherwise, naming the way out."""
        challenge = pkce_challenge(verifier)
        now = self.clock()
        again = "Run `kernelcup login --server URL` again."
        with self.db.transaction() as s:
            used = s.execute(
                update(WebSession)
                .where(
                    WebSession.sid_hash == _code_hash(code.strip(), challenge),
                    WebSession.via.startswith(CLI_CODE_VIA),
                    WebSession.ended_at.is_(None),
                    WebSession.expires_at > now,
                )
                .values(ended_at=now)
            )
            if getattr(used, "rowcount", 0) != 1:
                raise InvalidToken(
                    "This sign-in code is not valid: it was used already, it expired (a code must be used within "
                    f"minutes of its approval), or it was not made for this login. {again}"
                )
            row = s.scalar(select(WebSession).where(WebSession.sid_hash == _code_hash(code.strip(), challenge)))
            token = s.get(ApiToken, row.token_id) if row is not None else None
            if row is None or token is None:
                raise InvalidToken(f"The web sign-in that approved this code has ended. {again}")
            try:
                who = self._principal(s, token, None, now)
            except InvalidToken:
                raise InvalidToken(f"The web sign-in that approved this code has ended. {again}") from None
            via = row.via.removeprefix(CLI_CODE_VIA)
            _refuse_budgeted_maker(s, token.id)  # a sign-in's token (whatever its provider) mints no escape either
            self._audit(s, who.user.identity, "cli_sign_in", who.user.identity, client=client[:100], session=via)
        return self.create_token(
            who.user,
            name=f"CLI sign-in ({client})"[:100],
            scopes=(Scope.SUBMIT,),
            made_with=None if via in OAUTH_VIAS else who,
            actor=f"CLI browser sign-in ({who.user.identity})",
        )

    def _principal(self, s: Session, row: ApiToken, scope: Scope | None, now: datetime) -> Principal:
        """The principal of a token row, or ``InvalidToken``/``MissingScope`` (see :meth:`authenticate`)."""
        if row.revoked_at is not None:
            raise InvalidToken(
                f"This API token was revoked on {row.revoked_at:%Y-%m-%d %H:%M} UTC. Get a new one {GET_A_TOKEN}."
            )
        if row.expires_at is not None and row.expires_at <= now:
            raise InvalidToken(
                f"This API token expired on {row.expires_at:%Y-%m-%d %H:%M} UTC. Get a new one {GET_A_TOKEN}."
            )
        scopes = frozenset(Scope(v) for v in row.scopes if v in Scope._value2member_map_)
        if scope is not None and scope not in scopes:
            raise MissingScope(
                f"This API token may not do that: it needs the {scope.value!r} scope (it has: "
                f"{', '.join(sorted(scopes)) or 'none'})."
            )
        if row.last_used_at is None or (now - row.last_used_at).total_seconds() >= LAST_USED_RESOLUTION_S:
            s.execute(update(ApiToken).where(ApiToken.id == row.id).values(last_used_at=now))
        u = row.user
        return Principal(
            user=user_ref(u),
            user_id=u.id,
            is_program=u.is_program,
            token_id=row.id,
            scopes=scopes,
            expires_at=row.expires_at,
        )

    def set_program(self, user: UserRef, program: bool, *, actor: str = "") -> UserView:
        """Mark an account as a program (own limits, can be left out of rankings) or as a person again."""
        with self.db.transaction() as s:
            u = self._user(s, user)
            u.is_program = program
            self._audit(s, actor or "system", "mark_program" if program else "unmark_program", u.identity)
            s.flush()
            return UserView(u.id, u.name, u.identity, u.discord_id, u.is_banned, u.ban_reason, u.is_program)

    def _within(
        self, made_with: Principal, expires_at: datetime | None, now: datetime, *, asked_never: bool
    ) -> datetime | None:
        """``expires_at`` shortened to what a token made with ``made_with`` may have (see :meth:`create_token`)."""
        bounds = [made_with.expires_at] if made_with.expires_at is not None else []
        days = self.settings.token_expiry_days
        if days and not made_with.is_admin:
            bounds.append(now + timedelta(days=days))
        if not bounds:
            return expires_at
        if asked_never:
            limit = expiry_text(min(bounds))
            raise InvalidChange(
                f"A token made with a token expires (this one may last until {limit} at most); give a lifetime "
                "like 90d (a longer one is shortened to that), or leave it empty.",
                field="expires",
            )
        return min([*bounds, expires_at]) if expires_at is not None else min(bounds)

    def _check_token_count(self, s: Session, u: User, now: datetime) -> None:
        cap = self.settings.max_tokens_per_user
        if cap is None:
            return
        live = s.scalar(
            select(func.count(ApiToken.id)).where(
                ApiToken.user_id == u.id,
                ApiToken.revoked_at.is_(None),
                or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now),
            )
        )
        if live is not None and live >= cap:
            raise RateLimited(
                f"{u.name} already has {live} live API tokens, the most one account may have "
                f"(KERNELCUP_MAX_TOKENS_PER_USER={cap}). Revoke the ones no longer used (`kernelcup tokens list`, "
                "then `kernelcup tokens revoke ID`, or DELETE /api/v1/me/tokens/ID), then try again.",
                now + timedelta(minutes=1),
                code="too_many_tokens",
            )

    @staticmethod
    def _token_view(row: ApiToken, u: User) -> TokenView:
        return TokenView(
            token_id=row.id,
            user_name=u.name,
            identity=u.identity,
            is_program=u.is_program,
            name=row.name,
            prefix=row.prefix,
            scopes=tuple(Scope(v) for v in row.scopes if v in Scope._value2member_map_),
            created_at=row.created_at,
            created_by=row.created_by,
            expires_at=row.expires_at,
            last_used_at=row.last_used_at,
            revoked_at=row.revoked_at,
        )


def _refuse_budgeted_maker(s: Session, token_id: int) -> None:
    """``BudgetedTokenMaker`` where the token ``token_id`` has a GPU budget of its own: a token made with it would
    carry none, and the budget would bind nothing (see the module's text)."""
    if s.scalar(select(GpuBudget.id).where(GpuBudget.token_id == token_id)) is not None:
        raise BudgetedTokenMaker(
            f"This token (#{token_id}) has its own GPU budget, so it may not make tokens (a new one would not carry "
            "the budget). Make tokens signed in on the web page (`kernelcup login`, or /token in Discord), or ask an "
            "admin to make one or to raise this token's budget."
        )


def _may_revoke(s: Session, by_token_id: int, target: ApiToken) -> bool:
    """Whether the token ``by_token_id`` may revoke ``target`` (one of its account's): itself and the tokens made
    with it always; any other only when it was made by the person (not with a token) and has no budget of its own."""
    step: ApiToken | None = target
    for _ in range(MAX_TOKEN_CHAIN):
        if step is None:
            break
        if step.id == by_token_id:
            return True
        step = s.get(ApiToken, step.made_with_token_id) if step.made_with_token_id is not None else None
    acting = s.get(ApiToken, by_token_id)
    if acting is None or acting.made_with_token_id is not None:
        return False
    return s.scalar(select(GpuBudget.id).where(GpuBudget.token_id == by_token_id)) is None


def _live_session(s: Session, sid: str | None, now: datetime) -> tuple[WebSession, ApiToken]:
    """The web session ``sid`` and its token row, or ``InvalidToken`` once it was signed out or expired (a CLI
    sign-in's code, kept in the same table, is never a session)."""
    row = s.scalar(select(WebSession).where(WebSession.sid_hash == hash_token(sid or "")))
    if row is None or row.ended_at is not None or row.expires_at <= now or row.via.startswith(CLI_CODE_VIA):
        raise InvalidToken("This sign-in has ended (signed out, or expired); sign in again.")
    token = s.get(ApiToken, row.token_id)
    if token is None:  # gone with its row (ON DELETE CASCADE); only a race sees this
        raise InvalidToken("This sign-in has ended; sign in again.")
    return row, token


def pkce_challenge(verifier: str) -> str:
    """RFC 7636's S256 challenge of ``verifier``: base64url of its SHA-256, unpadded."""
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _code_hash(code: str, challenge: str) -> str:
    """How a CLI sign-in code is kept: with the challenge it was made for, so the code alone finds nothing."""
    return hash_token(f"{code}:{challenge}")


def user_ref(u: User) -> UserRef:
    """The ``UserRef`` of a user row (its identity's kind: Discord, GitHub or local)."""
    return UserRef(name=u.name, discord_id=u.discord_id) if u.discord_id is not None else _local(u)


def _local(u: User) -> UserRef:
    """The ``UserRef`` of a local account: its identity is ``local:<name>``, which its name may no longer spell
    (names are display names), so the identity is what is kept."""
    kind, _, rest = u.identity.partition(":")
    if kind == "github" and rest.isdigit():  # a GitHub sign-in's account (web/pages/oauth.py)
        return UserRef(name=u.name, github_id=int(rest))
    return UserRef(name=rest if kind == "local" else u.identity)


def expiry_text(when: datetime | None) -> str:
    return "never" if when is None else f"{when:%Y-%m-%d %H:%M} UTC"
