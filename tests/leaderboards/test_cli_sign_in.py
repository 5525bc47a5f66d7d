"""The CLI's browser sign-in in the service (``approve_cli_sign_in`` / ``redeem_cli_sign_in``), on SQLite and
PostgreSQL: a code is exchanged once, with its verifier, before it expires, while the approving sign-in lasts; the
token is submit-only and bounded by a pasted approver's token; a code is never a session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leaderboards.accounts import pkce_challenge
from leaderboards.errors import InvalidToken
from leaderboards.results import Scope, UserRef
from leaderboards.service import LeaderboardService

VERIFIER = "a-secret-only-this-cli-knows-0123456789-abcdefgh"
TTL = timedelta(seconds=120)


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(service: LeaderboardService) -> Clock:
    service.clock = clock = Clock()  # type: ignore[method-assign]
    return clock


def approved(service: LeaderboardService, token: str, via: str = "token") -> str:
    sid, _ = service.open_session(token, via=via, max_age=timedelta(days=1))
    return service.approve_cli_sign_in(sid, pkce_challenge(VERIFIER), client="laptop", ttl=TTL)


def test_a_code_is_exchanged_once_with_its_verifier(service: LeaderboardService, clock: Clock) -> None:
    admin = service.create_token(UserRef("root"), scopes=[Scope.ADMIN], expires_in=timedelta(days=3)).token
    code = approved(service, admin)
    with pytest.raises(InvalidToken, match="not valid"):
        service.redeem_cli_sign_in(code, "another-verifier-" * 3, client="laptop")
    with pytest.raises(InvalidToken):
        service.redeem_cli_sign_in(code + "x", VERIFIER, client="laptop")
    new = service.redeem_cli_sign_in(code, VERIFIER, client="laptop")
    who = service.authenticate(new.token, None)
    assert who.user == UserRef("root") and who.scopes == frozenset({Scope.SUBMIT})  # never the approver's admin
    assert new.info.name == "CLI sign-in (laptop)"
    # approved from a pasted token's session: it lasts no longer than that token
    assert new.info.expires_at is not None and new.info.expires_at <= clock.now + timedelta(days=3)
    with pytest.raises(InvalidToken, match="used already"):
        service.redeem_cli_sign_in(code, VERIFIER, client="laptop")
    actions = [e.action for e in service.audit_log(actor="local:root").entries]
    assert actions[:2] == ["cli_sign_in", "approve_cli_sign_in"]


def test_a_late_code_or_an_ended_sign_in_gets_nothing(service: LeaderboardService, clock: Clock) -> None:
    token = service.create_token(UserRef("ann"))
    code = approved(service, token.token)
    clock.now += TTL + timedelta(seconds=1)
    with pytest.raises(InvalidToken, match="expired"):
        service.redeem_cli_sign_in(code, VERIFIER, client="laptop")
    code = approved(service, token.token)
    service.revoke_token(token.info.token_id)
    with pytest.raises(InvalidToken, match="approved this code has ended"):
        service.redeem_cli_sign_in(code, VERIFIER, client="laptop")


def test_a_provider_sign_in_gives_the_cli_the_default_lifetime(service: LeaderboardService, clock: Clock) -> None:
    web = service.create_token(UserRef("Zed", discord_id=42), expires_in=timedelta(days=14)).token
    new = service.redeem_cli_sign_in(approved(service, web, via="discord"), VERIFIER, client="laptop")
    days = service.settings.token_expiry_days
    assert new.info.identity == "discord:42"
    assert new.info.expires_at == (clock.now + timedelta(days=days) if days else None)


def test_a_code_is_never_a_session(service: LeaderboardService, clock: Clock) -> None:
    token = service.create_token(UserRef("ann")).token
    code = approved(service, token)
    for sid in (code, f"{code}:{pkce_challenge(VERIFIER)}"):
        with pytest.raises(InvalidToken):
            service.session_principal(sid)
        with pytest.raises(InvalidToken):
            service.approve_cli_sign_in(sid, pkce_challenge(VERIFIER), client="x", ttl=TTL)
