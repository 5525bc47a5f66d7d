"""Accounts and tokens: random, hashed, scoped, expiring, revocable; program accounts with their own limits and
ranking visibility; who may read a submission's code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select

from leaderboards.accounts import hash_token, parse_expiry
from leaderboards.errors import InvalidChange, InvalidToken, MissingScope, NotFound, RateLimited, SubmissionNotFound
from leaderboards.models import ApiToken, AuditLog
from leaderboards.results import Scope, UserRef
from leaderboards.service import LeaderboardService

CODE = b"def custom_kernel(data):\n    return data\n"
ANN, BOT = UserRef("ann"), UserRef("generator")


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(service: LeaderboardService) -> Clock:
    service.clock = clock = Clock()
    return clock


@pytest.fixture
def board(service: LeaderboardService, tmp_path: Path) -> str:
    service.create_leaderboard(make_problem(tmp_path), deadline=future(), devices=["cpu"])
    return "add"


def test_a_token_is_random_shown_once_and_stored_as_a_hash(service: LeaderboardService) -> None:
    a, b = service.create_token(ANN), service.create_token(ANN)
    assert a.token.startswith("kc_") and len(a.token) >= 3 + 43 and a.token != b.token  # 256 random bits
    with service.db.transaction() as s:
        rows = s.scalars(select(ApiToken)).all()
    stored = {r.token_hash for r in rows} | {r.prefix for r in rows}
    assert a.token not in stored and hash_token(a.token) in stored
    assert a.info.prefix == a.token[:10] and a.info.scopes == (Scope.SUBMIT,)
    who = service.authenticate(a.token)
    assert who.user.identity == "local:ann" and who.token_id == a.info.token_id and not who.is_admin


def test_invalid_expired_revoked_and_scope(service: LeaderboardService, clock: Clock) -> None:
    with pytest.raises(InvalidToken, match="needs an API token"):
        service.authenticate(None)
    with pytest.raises(InvalidToken, match="not valid") as refused:
        service.authenticate("kc_nope")
    # both ways to a token: Discord's, and a deployment's own shell (a local one has no bot)
    assert "/token in Discord" in str(refused.value) and "`kernelcup tokens create NAME`" in str(refused.value)
    short = service.create_token(ANN, expires_in=timedelta(hours=1))
    assert service.authenticate(short.token).expires_at == clock.now + timedelta(hours=1)
    clock.now += timedelta(hours=2)
    with pytest.raises(InvalidToken, match="expired on"):
        service.authenticate(short.token)
    user = service.create_token(ANN)
    with pytest.raises(MissingScope, match="'admin' scope"):
        service.authenticate(user.token, Scope.ADMIN)
    admin = service.create_token(UserRef("root"), scopes=["admin"], never_expires=True, actor="shell")
    assert admin.info.scopes == (Scope.SUBMIT, Scope.ADMIN) and admin.info.expires_at is None
    assert service.authenticate(admin.token, Scope.ADMIN).is_admin
    service.revoke_token(admin.info.token_id, actor="shell")
    with pytest.raises(InvalidToken, match=r"revoked.*Get a new one with /token in Discord, or on the server with"):
        service.authenticate(admin.token)
    with pytest.raises(NotFound):
        service.revoke_token(user.info.token_id, user=UserRef("mallory"))  # someone else's: like a missing one
    assert [t.token_id for t in service.list_tokens(ANN)] == [user.info.token_id, short.info.token_id]
    assert len(service.list_tokens(include_revoked=True)) == 3
    with service.db.transaction() as s:
        actions = s.scalars(select(AuditLog.action)).all()
    assert actions.count("create_token") == 3 and actions.count("revoke_token") == 1
    with pytest.raises(InvalidChange, match="Unknown scope"):
        service.create_token(ANN, scopes=["root"])


def test_last_used_is_written_at_most_once_a_minute(service: LeaderboardService, clock: Clock) -> None:
    new = service.create_token(ANN)
    assert service.list_tokens(ANN)[0].last_used_at is None
    t0 = clock.now
    service.authenticate(new.token)
    clock.now += timedelta(seconds=10)
    service.authenticate(new.token)
    assert service.list_tokens(ANN)[0].last_used_at == t0
    clock.now += timedelta(seconds=60)
    service.authenticate(new.token)
    assert service.list_tokens(ANN)[0].last_used_at == clock.now


def test_expiry_text() -> None:
    assert parse_expiry("90d") == timedelta(days=90) and parse_expiry("12h") == timedelta(hours=12)
    assert (
        parse_expiry("2w") == timedelta(weeks=2) and parse_expiry("never") is None and parse_expiry("7") == timedelta(7)
    )
    with pytest.raises(InvalidChange, match="like 90d"):
        parse_expiry("soon")


def test_programs_have_their_own_limits(service: LeaderboardService, board: str) -> None:
    service.settings.program_max_pending_jobs = 2
    service.settings.program_rate_limit_per_hour = 3
    service.create_token(BOT, program=True)
    for _ in range(2):
        service.submit(BOT, "k.py", CODE, board)
    with pytest.raises(RateLimited, match="at most 2"):
        service.submit(BOT, "k.py", CODE, board)
    for _ in range(3):
        service.submit(ANN, "k.py", CODE, board)  # people keep theirs (50 pending, no hourly limit)
    service.settings.program_max_pending_jobs = 50
    service.submit(BOT, "k.py", CODE, board)
    with pytest.raises(RateLimited, match="3 times per hour"):
        service.submit(BOT, "k.py", CODE, board)


def rank(service: LeaderboardService, who: UserRef, board: str, median: float) -> int:
    sub = service.submit(who, "k.py", CODE + str(median).encode() + b"\n", board).submission_id
    [job] = service.submission_status(sub).jobs
    service.record_run(job.job_id, run_result((median,)))
    service.record_run(job.job_id, run_result((median,)), secret=True)
    return sub


def test_rankings_show_or_hide_programs_and_page(service: LeaderboardService, board: str) -> None:
    service.set_program(BOT, True)
    rank(service, BOT, board, 100.0)
    rank(service, ANN, board, 200.0)
    rank(service, UserRef("cy"), board, 300.0)
    everyone = service.ranking(board)
    assert [(e.rank, e.user_name, e.is_program) for e in everyone.entries] == [
        (1, "generator", True),
        (2, "ann", False),
        (3, "cy", False),
    ]
    people = service.ranking(board, programs=False)
    assert [(e.rank, e.user_name) for e in people.entries] == [(1, "ann"), (2, "cy")] and people.total == 2
    page = service.ranking(board, limit=1, offset=1)
    assert [(e.rank, e.user_name) for e in page.entries] == [(2, "ann")] and page.total == 3
    assert service.ranking(board, limit=5, offset=9).total == 3
    service.settings.rankings_show_programs = False
    assert service.ranking(board).total == 2 and service.ranking(board, programs=True).total == 3


def test_code_is_public_only_for_ranked_entries_after_a_deadline_that_says_so(
    service: LeaderboardService, board: str, clock: Clock
) -> None:
    ranked = rank(service, ANN, board, 100.0)
    test_only = service.submit(ANN, "k.py", CODE, board, mode="test").submission_id
    other = UserRef("cy")
    with pytest.raises(SubmissionNotFound):
        service.submission_code(ranked, other)
    assert service.submission_code(ranked, ANN).code == CODE.decode() + "100.0\n"
    assert service.submission_code(ranked, None, admin=True).public is False
    service.update_leaderboard(board, code_public_after_deadline=True)
    with pytest.raises(SubmissionNotFound):
        service.submission_code(ranked, other)  # before the deadline: never
    clock.now = future(60)
    view = service.submission_code(ranked, None)
    assert view.public and view.user_name == "ann"
    with pytest.raises(SubmissionNotFound):
        service.submission_code(test_only, None)  # not a ranked entry
    with pytest.raises(SubmissionNotFound):
        service.submission_details(ranked, other)  # details and logs stay the owner's


def test_a_lifetime_past_any_date_is_refused_as_a_field_error() -> None:
    assert parse_expiry("36500d") == timedelta(days=36500)
    for text in ("36501d", "999999999d", "99999999999d", "9" * 400 + "w"):
        with pytest.raises(InvalidChange, match="longer than a token may last") as refused:
            parse_expiry(text)
        assert refused.value.field == "expires"


def test_a_token_made_with_a_token_never_outlives_it_nor_the_default(service: LeaderboardService, clock: Clock) -> None:
    day = service.authenticate(service.create_token(ANN, expires_in=timedelta(days=1)).token)
    for lifetime in (timedelta(days=365), None):
        new = service.create_token(ANN, expires_in=lifetime, made_with=day)
        assert new.info.expires_at == day.expires_at  # shortened to the token that made it
    with pytest.raises(InvalidChange, match="A token made with a token expires") as refused:
        service.create_token(ANN, never_expires=True, made_with=day)
    assert refused.value.field == "expires"
    forever = service.authenticate(service.create_token(ANN, never_expires=True, actor="shell").token)
    new = service.create_token(ANN, expires_in=timedelta(days=365), made_with=forever)
    assert new.info.expires_at == clock.now + timedelta(days=90)  # KERNELCUP_TOKEN_EXPIRY_DAYS
    with pytest.raises(InvalidChange, match=r"until .* at most"):
        service.create_token(ANN, never_expires=True, made_with=forever)
    assert service.create_token(ANN, expires_in=timedelta(hours=1), made_with=day).info.expires_at == (
        clock.now + timedelta(hours=1)
    )
    root = service.authenticate(service.create_token(UserRef("root"), scopes=["admin"], never_expires=True).token)
    assert service.create_token(UserRef("root"), never_expires=True, made_with=root).info.expires_at is None


def test_live_tokens_per_user_are_capped(service: LeaderboardService, clock: Clock) -> None:
    service.settings.max_tokens_per_user = 3
    short = service.create_token(ANN, expires_in=timedelta(hours=1))
    revoked = service.create_token(ANN)
    service.create_token(ANN)
    with pytest.raises(RateLimited, match=r"already has 3 live API tokens.*KERNELCUP_MAX_TOKENS_PER_USER=3.*Revoke"):
        service.create_token(ANN)
    service.create_token(BOT)  # per account
    service.revoke_token(revoked.info.token_id)
    service.create_token(ANN)  # a revoked one does not count
    clock.now += timedelta(hours=2)
    assert short.info.expires_at is not None and short.info.expires_at < clock.now
    service.create_token(ANN)  # nor an expired one
    with pytest.raises(RateLimited) as refused:
        service.create_token(ANN)
    assert refused.value.code == "too_many_tokens"
