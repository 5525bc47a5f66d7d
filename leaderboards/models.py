"""The database schema: SQLAlchemy 2 declarative models, the same on SQLite and PostgreSQL.

Portability choices (each one is a difference between the two dialects):

- ids are ``BigInteger`` (Discord snowflakes need 64 bits) but plain ``INTEGER`` on SQLite, where only
  ``INTEGER PRIMARY KEY`` auto-increments;
- JSON columns are ``JSONB`` on PostgreSQL and ``JSON`` elsewhere;
- timestamps are ``timestamptz`` on PostgreSQL; SQLite keeps no zone, so ``UTCDateTime`` stores UTC and hands
  back aware UTC datetimes on both.

The migrations in ``migrations/versions`` must describe exactly these tables; ``tests/leaderboards/test_db.py``
checks that with Alembic's ``compare_metadata`` on both dialects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    func,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from leaderboards.results import JobStatus as JobStatus  # the status enum is part of the answers; stored as text

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

Id = BigInteger().with_variant(Integer(), "sqlite")
"""Primary and foreign keys: 64-bit on PostgreSQL, the auto-incrementing rowid alias on SQLite."""


def without_nul(value: Any) -> Any:
    """``value`` with every U+0000 in its strings (keys too) replaced by U+FFFD: PostgreSQL refuses NUL in text and
    in JSONB, and a submission's output, messages and errors may carry it (red team, 2026-11-24: one
    ``print("\\x00")`` made the result unstorable, the job retried three times and blamed on the platform)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list | tuple):
        return [without_nul(v) for v in value]
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    return value


class StoredJSON(TypeDecorator[Any]):
    """JSON (JSONB on PostgreSQL) whose strings never hold U+0000 (:func:`without_nul`)."""

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        return dialect.type_descriptor(JSONB() if dialect.name == "postgresql" else JSON())

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return without_nul(value)


class StoredText(TypeDecorator[str]):
    """Text that never holds U+0000 (:func:`without_nul`): messages and details that may quote a submission."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Any) -> str | None:
        return without_nul(value)


JSONType = StoredJSON()


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime on every dialect (SQLite stores naive text, so the zone is restored on read)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; use datetime.now(UTC)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _created() -> Mapped[datetime]:
    return mapped_column(UTCDateTime(), default=utcnow, server_default=func.current_timestamp(), nullable=False)


class User(Base):
    __tablename__ = "users"
    # Banned users are few: the ranking subtracts them through this small partial index.
    __table_args__ = (
        Index("ix_users_banned", "id", postgresql_where=text("is_banned"), sqlite_where=text("is_banned")),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    identity: Mapped[str] = mapped_column(
        String(200), unique=True, comment="'discord:<snowflake>' or 'local:<name>'; other identities later"
    )
    discord_id: Mapped[int | None] = mapped_column(BigInteger(), unique=True)
    name: Mapped[str] = mapped_column(String(100))
    is_banned: Mapped[bool] = mapped_column(Boolean(), default=False, server_default=false())
    ban_reason: Mapped[str | None] = mapped_column(StoredText())
    last_claimed_at: Mapped[datetime | None] = mapped_column(
        UTCDateTime(), comment="when a worker last took one of this user's jobs: claims go round-robin by it"
    )
    is_program: Mapped[bool] = mapped_column(
        Boolean(), default=False, server_default=false(), comment="a program (e.g. a kernel generator), not a person"
    )
    created_at: Mapped[datetime] = _created()


class Leaderboard(Base):
    __tablename__ = "leaderboards"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    description: Mapped[str] = mapped_column(StoredText(), default="")
    deadline: Mapped[datetime] = mapped_column(UTCDateTime())
    task: Mapped[dict[str, Any]] = mapped_column(
        JSONType,
        deferred=True,  # tens of KB of files: loaded only where used, not for every ranking or submission check
        comment="snapshot: {'problem', 'task' (task.yml as JSON), 'files', 'templates'}",
    )
    problem: Mapped[str] = mapped_column(
        String(200), default="", server_default="", comment="the problem folder's name: lists never load the task"
    )
    lang: Mapped[str] = mapped_column(String(8))
    devices: Mapped[list[str]] = mapped_column(JSONType)
    ranking_by: Mapped[str] = mapped_column(String(8))
    secret_seed: Mapped[int] = mapped_column(BigInteger(), comment="server side only; never in a service result")
    creator: Mapped[str] = mapped_column(String(100), default="")
    visible: Mapped[bool] = mapped_column(Boolean(), default=True, server_default=true())
    paused: Mapped[bool] = mapped_column(Boolean(), default=False, server_default=false())
    rate_limit_per_hour: Mapped[int | None] = mapped_column(Integer())
    fingerprint: Mapped[str] = mapped_column(String(64), comment="hash of what makes scores comparable")
    problem_set: Mapped[str | None] = mapped_column(String(200))
    code_public_after_deadline: Mapped[bool] = mapped_column(
        Boolean(), default=False, server_default=false(), comment="ranked entries' code is public after the deadline"
    )
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class SubmissionCode(Base):
    __tablename__ = "submission_code"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    content: Mapped[bytes] = mapped_column(LargeBinary())
    created_at: Mapped[datetime] = _created()


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        Index(None, "leaderboard_id", "user_id", "created_at"),
        Index(None, "user_id", "created_at"),
        Index(None, "created_at", "id"),  # the archive's newest-first pages (migration 0018)
        {"sqlite_autoincrement": True},  # an id is never handed out again after a deletion (followers, links)
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"))
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    code_id: Mapped[int] = mapped_column(Id, ForeignKey("submission_code.id"), index=True)
    file_name: Mapped[str] = mapped_column(String(255))
    mode: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = _created()
    deleted: Mapped[bool] = mapped_column(Boolean(), default=False, server_default=false())
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    moderation: Mapped[str | None] = mapped_column(
        String(16), index=True, comment="None, flagged, quarantined, hacked or cleared (leaderboards.moderation)"
    )
    moderation_reason: Mapped[str | None] = mapped_column(StoredText(), comment="shown to the author")
    moderated_by: Mapped[str | None] = mapped_column(String(200))
    moderated_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    user: Mapped[User] = relationship(lazy="joined")
    leaderboard: Mapped[Leaderboard] = relationship()
    code: Mapped[SubmissionCode] = relationship()
    jobs: Mapped[list[Job]] = relationship(back_populates="submission", order_by="Job.id", passive_deletes=True)


class SubmissionComparison(Base):
    """What a compare submission (``mode`` compare) adds to its row: the second file, the rounds, and the result.

    The submission's own code is the first file (A); one job on one device runs the rounds (``leaderboards/
    worker.py``) and stores the comparison here, never a run: a compare enters no ranking.
    """

    __tablename__ = "comparisons"

    submission_id: Mapped[int] = mapped_column(
        Id, ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    code_b_id: Mapped[int] = mapped_column(Id, ForeignKey("submission_code.id"), index=True)
    file_b_name: Mapped[str] = mapped_column(String(255))
    rounds: Mapped[int] = mapped_column(Integer(), comment="even; each round runs both files once")
    profile: Mapped[bool] = mapped_column(
        Boolean(),
        default=False,
        server_default=false(),
        comment="after the rounds, profile each case of both files (kernel metric deltas)",
    )
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONType, comment="the runners.contract.Comparison")
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    code_b: Mapped[SubmissionCode] = relationship()


class Job(Base):
    """One run of one submission on one device. The job rows are the queue (``leaderboards/queue.py``)."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index(None, "status", "device", "next_attempt_at"),
        Index(None, "status", "lease_expires_at"),
        {"sqlite_autoincrement": True},  # a late write for a deleted job can never land on a new one
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    submission_id: Mapped[int] = mapped_column(Id, ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    device: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.QUEUED.value)
    verdict: Mapped[str | None] = mapped_column(String(32), comment="the worst verdict of the job's runs")
    attempts: Mapped[int] = mapped_column(Integer(), default=0)
    max_attempts: Mapped[int] = mapped_column(Integer(), default=3)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    remote_ref: Mapped[str | None] = mapped_column(String(500))
    error: Mapped[str | None] = mapped_column(StoredText(), comment="user-readable")
    created_at: Mapped[datetime] = _created()
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    ranked_score: Mapped[float | None] = mapped_column(
        Float(), comment="ns: a ranked job's score from both its runs (leaderboards.pooling); None: the slower run's"
    )
    ranked_flagged: Mapped[bool] = mapped_column(
        Boolean(), default=False, server_default=false(), comment="a case ran clearly slower on the secret inputs"
    )
    ranked_note: Mapped[str | None] = mapped_column(StoredText(), comment="user-readable: why not a plain pooling")

    submission: Mapped[Submission] = relationship(back_populates="jobs")
    runs: Mapped[list[Run]] = relationship(back_populates="job", order_by="Run.id", passive_deletes=True)


class Run(Base):
    """One result of a job: the public run, and for ranked jobs the secret-seed run too."""

    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("job_id", "secret"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    job_id: Mapped[int] = mapped_column(Id, ForeignKey("jobs.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(Id, ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    device: Mapped[str] = mapped_column(String(32))
    mode: Mapped[str] = mapped_column(String(16))
    secret: Mapped[bool] = mapped_column(Boolean())
    passed: Mapped[bool] = mapped_column(Boolean())
    verdict: Mapped[str] = mapped_column(String(32))
    score: Mapped[float | None] = mapped_column(Float(), comment="ns, lower is better")
    fingerprint: Mapped[str] = mapped_column(String(64), comment="the leaderboard's fingerprint when recorded")
    result: Mapped[dict[str, Any]] = mapped_column(JSONType, comment="the RunResult")
    system: Mapped[dict[str, Any]] = mapped_column(JSONType)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = _created()

    job: Mapped[Job] = relationship(back_populates="runs")


class JobEvent(Base):
    __tablename__ = "job_events"
    __table_args__ = (Index(None, "job_id", "id"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    job_id: Mapped[int] = mapped_column(Id, ForeignKey("jobs.id", ondelete="CASCADE"))
    phase: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(StoredText(), default="")
    created_at: Mapped[datetime] = _created()


class Worker(Base):
    """A live worker process (heartbeats), so ``kernelcup submit`` can tell whether anyone serves the queue."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(200), default="")
    pid: Mapped[int | None] = mapped_column(Integer())
    devices: Mapped[list[str]] = mapped_column(JSONType, default=list)
    started_at: Mapped[datetime] = _created()
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    stopped_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    healthy: Mapped[bool] = mapped_column(Boolean(), default=True, server_default=true())
    health_note: Mapped[str | None] = mapped_column(
        StoredText(), comment="why the worker stopped claiming, for operators"
    )
    unhealthy_since: Mapped[datetime | None] = mapped_column(UTCDateTime())
    busy_with: Mapped[str | None] = mapped_column(
        StoredText(),
        comment="the work besides jobs it runs now, one label each, '; '-joined (input hack, system test, re-timing "
        "round, rejudge): it holds a place but no job row; null: none",
    )


class BestScore(Base):
    """Each user's best eligible ranked submission per leaderboard and device (the ranking, kept up to date).

    Written in the same transaction as the run that makes a submission eligible (public and secret runs
    passed, fingerprint current); rebuilt for one user from ``runs`` when a submission is deleted, and for a
    whole leaderboard by ``LeaderboardService.rebuild_rankings``. Banned users stay here and are filtered out
    when read, so unbanning restores them.
    """

    __tablename__ = "best_scores"
    __table_args__ = (
        UniqueConstraint("leaderboard_id", "device", "user_id"),
        Index("ix_best_scores_ranking", "leaderboard_id", "device", "score", "submitted_at", "submission_id"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    device: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[int] = mapped_column(Id, ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    score: Mapped[float] = mapped_column(Float())
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ScoreImprovement(Base):
    """One step of a user's best score over time on a leaderboard and device: an eligible submission that beat
    every earlier one of the same user there (earlier by submission time, then id; a tie is no improvement).

    A user's best over time is a step function that only changes at these rows, so the history stores and returns
    them, not every run: a user's rows in time order have strictly falling scores and the last is their current
    best (``best_scores``). Kept in the same transaction as ``best_scores`` (``ranking.offer``) and rebuilt with it
    (``ranking.rebuild``); banned users' rows stay and are filtered when read, as in ``best_scores``.
    """

    __tablename__ = "score_improvements"
    __table_args__ = (
        # A user's series in time order (the history's pages, and the write path's "best before this one").
        Index("ix_score_improvements_user", "leaderboard_id", "device", "user_id", "submitted_at", "submission_id"),
        # The leaderboard's best over time: every user's steps in time order, read from the index alone.
        Index(
            "ix_score_improvements_time",
            "leaderboard_id",
            "device",
            "submitted_at",
            "submission_id",
            "score",
            "user_id",
        ),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    device: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(Id, ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    score: Mapped[float] = mapped_column(Float())
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime())


class RankChange(Base):
    """A user reaching a top rank (``KERNELCUP_ANNOUNCE_TOP``) on a leaderboard/device; announced at most once.

    ``announced_at`` is set by ``claim_announcements`` in the same statement that hands the row out, so two bot
    processes or a restarted bot never announce one change twice.
    """

    __tablename__ = "rank_changes"
    __table_args__ = (Index(None, "announced_at", "id"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"), index=True)
    device: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(Id, ForeignKey("submissions.id", ondelete="CASCADE"))
    old_rank: Mapped[int | None] = mapped_column(Integer())
    new_rank: Mapped[int] = mapped_column(Integer())
    score: Mapped[float] = mapped_column(Float())
    previous_score: Mapped[float | None] = mapped_column(Float(), comment="the user's own previous best")
    created_at: Mapped[datetime] = _created()
    announced_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    announced_by: Mapped[str | None] = mapped_column(String(200))


class ApiToken(Base):
    """An API token of a user: only its SHA-256 is stored (the token itself is shown once, at creation)."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100), default="", comment="what the owner calls it")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, comment="sha256 hex of the token")
    prefix: Mapped[str] = mapped_column(String(16), comment="the token's first characters, to recognise it")
    scopes: Mapped[list[str]] = mapped_column(JSONType, default=list)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    made_with_token_id: Mapped[int | None] = mapped_column(
        Id,
        ForeignKey("api_tokens.id", ondelete="SET NULL"),
        comment="the token it was made with (POST /me/tokens, a CLI sign-in approved by a pasted token): it may revoke "
        "only itself and the tokens made with it; null: made by the person (Discord, the shell, a web sign-in)",
    )

    user: Mapped[User] = relationship(lazy="joined")


class WebSession(Base):
    """A signed-in web page session (docs/web.md). The cookie carries a random session id that is no API token; only
    its SHA-256 is stored. It speaks for the token it was opened with: revoking that token ends it, and signing out
    ends it here (``ended_at``), so a copy of the cookie is dead after sign-out."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    sid_hash: Mapped[str] = mapped_column(String(64), unique=True, comment="sha256 hex of the cookie's session id")
    token_id: Mapped[int] = mapped_column(Id, ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True)
    via: Mapped[str] = mapped_column(String(16), comment="token (pasted) or discord (its token ends with it)")
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), comment="signed out")


class AuditLog(Base):
    """Admin actions (create/update/delete leaderboard, ban, pause, ...): who did what, when."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(200))
    detail: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, server_default=func.current_timestamp(), nullable=False, index=True
    )


class SystemTest(Base):
    """One entry's system test (issue 29, ``leaderboards/holdout.py``): its submission run on the problem's held-out
    cases on one device. A queue of its own, claimed by a worker only when no job is runnable (below every person's
    submission). Only counts are kept: never a held-out case, input, output or message."""

    __tablename__ = "system_tests"
    __table_args__ = (
        UniqueConstraint("leaderboard_id", "device", "submission_id"),
        Index(None, "status", "device"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    device: Mapped[str] = mapped_column(String(32))
    submission_id: Mapped[int] = mapped_column(Id, ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16), comment="queued, running, done, failed (not the entry's fault)")
    trigger: Mapped[str] = mapped_column(String(16), comment="admin or deadline")
    cases: Mapped[int] = mapped_column(Integer(), comment="held-out cases run")
    passed: Mapped[int | None] = mapped_column(Integer(), comment="held-out cases passed; None until done")
    attempts: Mapped[int] = mapped_column(Integer(), default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    note: Mapped[str | None] = mapped_column(StoredText(), comment="admins only: why a test could not run")
    created_at: Mapped[datetime] = _created()
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    timings: Mapped[list[Any] | None] = mapped_column(
        JSONType, comment="held-out cases timed (holdout_timed): each case's timing statistics, in order; no case"
    )
    score_ns: Mapped[float | None] = mapped_column(Float(), comment="the problem's rule over the timed held-out cases")


class RetimeRound(Base):
    """One round of a re-timing of a device's finalists (issue 29, ``leaderboards/retiming.py``): each entry's
    benchmark run, one after another on one machine, in this round's order (alternating from round to round); rounds
    are spread over the live workers serving the device (``assigned_worker``) and leased one by one."""

    __tablename__ = "retime_rounds"
    __table_args__ = (Index(None, "status", "device"), Index(None, "leaderboard_id", "device", "batch"))

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    device: Mapped[str] = mapped_column(String(32))
    batch: Mapped[str] = mapped_column(String(32), comment="the rounds queued together share it")
    seed: Mapped[int] = mapped_column(BigInteger(), comment="the batch's inputs: every entry times the same ones")
    round: Mapped[int] = mapped_column(Integer())
    trigger: Mapped[str] = mapped_column(String(16), comment="admin or deadline")
    entries: Mapped[list[Any]] = mapped_column(JSONType, comment="submission ids in this round's order")
    status: Mapped[str] = mapped_column(String(16), comment="queued, running, done, failed (not the entries' fault)")
    attempts: Mapped[int] = mapped_column(Integer(), default=0)
    assigned_worker: Mapped[str | None] = mapped_column(String(200), comment="the live worker it was spread to")
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    worker_id: Mapped[str | None] = mapped_column(String(200), comment="the worker (machine) that ran it")
    machine: Mapped[str | None] = mapped_column(String(200), comment="the runtime it reported, e.g. 'torch 2.6.0'")
    results: Mapped[dict[str, Any] | None] = mapped_column(
        JSONType, comment="per submission: passed, score_ns and each case's timing statistics"
    )
    note: Mapped[str | None] = mapped_column(StoredText(), comment="admins only: why a round could not run")
    created_at: Mapped[datetime] = _created()
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class FinalStanding(Base):
    """A leaderboard's frozen final standings on one device (issue 29, ``leaderboards/standings.py``): the ranked
    entries with the per-case timing statistics each score and interval were computed from, so they recompute
    bit-identically, and the entries left out (failed a system test)."""

    __tablename__ = "final_standings"
    __table_args__ = (UniqueConstraint("leaderboard_id", "device"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    device: Mapped[str] = mapped_column(String(32))
    ranking_by: Mapped[str] = mapped_column(String(8))
    entries: Mapped[list[Any]] = mapped_column(JSONType, comment="each: user, submission, coverage, per-case stats")
    excluded: Mapped[list[Any]] = mapped_column(JSONType, comment="entries that failed a held-out case: counts only")
    frozen_by: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = _created()


class Rejudge(Base):
    """One entry re-run at the queue's lowest priority (issue 29, ``leaderboards/rejudge.py``): an admin's rejudge or
    the re-timing a runtime change queues. Its runs are not stored as ``runs`` and never rank: the entry's old runs
    stay its score (the history), and the rejudge keeps the new ranked score, the drift, and what it ran on."""

    __tablename__ = "rejudges"
    __table_args__ = (Index(None, "status", "device"), Index(None, "submission_id", "device"))

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    device: Mapped[str] = mapped_column(String(32))
    submission_id: Mapped[int] = mapped_column(Id, ForeignKey("submissions.id", ondelete="CASCADE"))
    trigger: Mapped[str] = mapped_column(String(16), comment="admin or runtime")
    status: Mapped[str] = mapped_column(String(16), comment="queued, running, done, failed")
    attempts: Mapped[int] = mapped_column(Integer(), default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    old_score: Mapped[float | None] = mapped_column(Float(), comment="ns: the entry's ranked score when queued")
    new_score: Mapped[float | None] = mapped_column(Float(), comment="ns: the rejudge's ranked score")
    drift: Mapped[float | None] = mapped_column(Float(), comment="new / old - 1")
    passed: Mapped[bool | None] = mapped_column(Boolean(), comment="both runs of the rejudge passed")
    reference_drift: Mapped[float | None] = mapped_column(Float(), comment="the reference's medians, new / old - 1")
    runtime: Mapped[str | None] = mapped_column(String(200), comment="e.g. 'torch 2.6.0': what it ran on")
    system: Mapped[dict[str, Any] | None] = mapped_column(JSONType, comment="the rejudge's SystemInfo")
    requested_by: Mapped[str] = mapped_column(String(200))
    note: Mapped[str | None] = mapped_column(StoredText(), comment="admins only: why it failed")
    created_at: Mapped[datetime] = _created()
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class RunnerSystem(Base):
    """A runtime a device's runs reported (``leaderboards/rejudge.py``): a new one re-times what stands."""

    __tablename__ = "runner_systems"
    __table_args__ = (UniqueConstraint("device", "fingerprint"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    device: Mapped[str] = mapped_column(String(32))
    fingerprint: Mapped[str] = mapped_column(String(64))
    system: Mapped[dict[str, Any]] = mapped_column(JSONType, comment="driver, cuda, torch, triton, nvcc, gpu_name")
    created_at: Mapped[datetime] = _created()


class AdminAlert(Base):
    """Something an admin must look at (a reference that drifted after a runtime change). An open alert that
    ``holds_announcements`` keeps its leaderboard's rank changes from being announced until it is resolved."""

    __tablename__ = "admin_alerts"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int | None] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    device: Mapped[str | None] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(StoredText())
    holds_announcements: Mapped[bool] = mapped_column(Boolean())
    created_at: Mapped[datetime] = _created()
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), index=True)
    resolved_by: Mapped[str | None] = mapped_column(String(200))


class LateSubmission(Base):
    """A submission made after its leaderboard's deadline (issue 29, ``leaderboards/late.py``): unranked practice,
    in no ranking or standings, unless an admin admitted it as ranked (who, why, when; audited)."""

    __tablename__ = "late_submissions"
    __table_args__ = (Index(None, "leaderboard_id", "submission_id"),)

    submission_id: Mapped[int] = mapped_column(
        Id, ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    admitted_by: Mapped[str | None] = mapped_column(String(200), comment="the admin who let it in as ranked")
    admitted_reason: Mapped[str | None] = mapped_column(StoredText(), comment="why, shown with the entry")
    admitted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = _created()


class Invite(Base):
    """An invite code to a hidden leaderboard (issue 29, ``leaderboards/invites.py``): only its SHA-256 is stored (the
    code is shown once, to the admin who made it)."""

    __tablename__ = "invites"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"), index=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True, comment="sha256 hex of the code")
    prefix: Mapped[str] = mapped_column(String(16), comment="the code's first characters, to recognise it")
    max_uses: Mapped[int] = mapped_column(Integer())
    uses: Mapped[int] = mapped_column(Integer(), default=0)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_by: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = _created()
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class BoardMember(Base):
    """A user let into a hidden leaderboard by an invite code: the board is visible to them as if it were public."""

    __tablename__ = "board_members"
    __table_args__ = (UniqueConstraint("leaderboard_id", "user_id"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    invite_id: Mapped[int | None] = mapped_column(Id, ForeignKey("invites.id", ondelete="SET NULL"), index=True)
    joined_at: Mapped[datetime] = _created()


class InviteFailure(Base):
    """A join with a code that let nobody in (unknown, expired, used up, revoked): counted per user to bound guessing.
    The code itself is never stored."""

    __tablename__ = "invite_failures"
    __table_args__ = (Index(None, "user_id", "created_at"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = _created()


class SubmissionLicence(Base):
    """The licence a submission's author chose for the open archive (issue 34, ``leaderboards/archive.py``). No row
    means ``none``: never published. Changeable until published; withdrawing unpublishes it again."""

    __tablename__ = "submission_licences"

    submission_id: Mapped[int] = mapped_column(
        Id, ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    licence: Mapped[str] = mapped_column(String(16), comment="'none' or an SPDX id of leaderboards.licences.LICENCES")
    withdrawn_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), comment="unpublished by its author")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class ArchiveAccount(Base):
    """A user's archive settings (issue 34): the licence of their submissions that name none, and how the archive
    names them. No row: licence ``none``, named as on the leaderboards."""

    __tablename__ = "archive_accounts"

    user_id: Mapped[int] = mapped_column(
        Id, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    default_licence: Mapped[str] = mapped_column(String(16), default="none")
    author_name: Mapped[str | None] = mapped_column(
        String(100), comment="how the archive names them; None: their leaderboard name; '' : anonymous"
    )


class ArchivePolicy(Base):
    """When a leaderboard's licensed kernels may be published (issue 34). No row: after the deadline."""

    __tablename__ = "archive_policies"

    leaderboard_id: Mapped[int] = mapped_column(
        Id, ForeignKey("leaderboards.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    at_once: Mapped[bool] = mapped_column(Boolean(), comment="publish as soon as they run (practice boards)")


class ArchiveEntryRow(Base):
    """One public run of a submission whose author licensed it (issue 34, ``leaderboards/archive.py``): the archive's
    filter and sort columns, kept so that a page is one index range instead of a six-table join over every run.

    Written by ``leaderboards.archive.refresh_archive_entries`` when a public run is recorded and when the licence
    changes or is withdrawn (a row exists only while the licence is not ``none`` and not withdrawn). What can change
    without either (deletion, moderation, a ban, the board's visibility, deadline and policy) is checked by the
    archive's query against the submission, user and leaderboard rows."""

    __tablename__ = "archive_entries"
    __table_args__ = (  # newest first walks them backwards (ties: submission id, then device, descending)
        Index("ix_archive_entries_newest", "submitted_at", "submission_id", "device"),
        Index("ix_archive_entries_problem_newest", "problem", "submitted_at", "submission_id", "device"),
        Index("ix_archive_entries_problem_device_newest", "problem", "device", "submitted_at", "submission_id"),
        Index("ix_archive_entries_board_newest", "leaderboard_id", "submitted_at", "submission_id"),
        Index("ix_archive_entries_speed", "score", "submission_id", "device"),
        Index("ix_archive_entries_problem_speed", "problem", "score", "submission_id", "device"),
        Index("ix_archive_entries_problem_device_speed", "problem", "device", "score", "submission_id"),
    )

    run_id: Mapped[int] = mapped_column(
        Id, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True, autoincrement=False, comment="the public run"
    )
    submission_id: Mapped[int] = mapped_column(Id, ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    device: Mapped[str] = mapped_column(String(32))
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    problem: Mapped[str] = mapped_column(String(200))
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime())
    passed: Mapped[bool] = mapped_column(Boolean())
    score: Mapped[float | None] = mapped_column(Float(), comment="the public run's score, ns")
    speedup: Mapped[float | None] = mapped_column(Float(), comment="over the reference, geometric mean of the cases")
    roofline_share: Mapped[float | None] = mapped_column(Float())


class SimilaritySignature(Base):
    """A submission's code fingerprint (issue 34, ``leaderboards/similarity_index.py``): its shingle hashes, stored
    when the submission is, so that near-clone searches never re-tokenise code."""

    __tablename__ = "similarity_signatures"

    submission_id: Mapped[int] = mapped_column(
        Id, ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    problem: Mapped[str] = mapped_column(String(200), index=True, comment="its leaderboard's problem")
    shingles: Mapped[bytes] = mapped_column(LargeBinary(), comment="the fingerprint's 8-byte hashes, sorted")


class SimilarityBand(Base):
    """One band of a submission's MinHash (``leaderboards/similarity_index.py``): submissions of a problem sharing a
    (band, bucket) are candidates for near clones."""

    __tablename__ = "similarity_bands"
    __table_args__ = (Index("ix_similarity_bands_lookup", "problem", "band", "bucket", "submission_id"),)

    submission_id: Mapped[int] = mapped_column(
        Id, ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    band: Mapped[int] = mapped_column(Integer(), primary_key=True, autoincrement=False)
    problem: Mapped[str] = mapped_column(String(200))
    bucket: Mapped[int] = mapped_column(BigInteger(), comment="a signed 64-bit hash of the band's MinHash values")


class Batch(Base):
    """Candidates a program sent in one call (issue 33, ``leaderboards/batches.py``): one problem, device and mode;
    each candidate is a ``BatchItem`` (its submission, or why it was refused)."""

    __tablename__ = "batches"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_id: Mapped[int | None] = mapped_column(Id, ForeignKey("api_tokens.id", ondelete="SET NULL"))
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    device: Mapped[str] = mapped_column(String(32))
    mode: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = _created()


class BatchItem(Base):
    """One candidate of a batch, in the order it was sent: its submission, or the error that refused it alone."""

    __tablename__ = "batch_items"

    batch_id: Mapped[int] = mapped_column(
        Id, ForeignKey("batches.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    position: Mapped[int] = mapped_column(Integer(), primary_key=True, autoincrement=False)
    file_name: Mapped[str] = mapped_column(String(255))
    submission_id: Mapped[int | None] = mapped_column(
        Id, ForeignKey("submissions.id", ondelete="CASCADE"), index=True, comment="None: refused (see error)"
    )
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONType, comment="a refused candidate's code, message, field")


class SubmissionOrigin(Base):
    """Where a submission came from, when it matters (issue 33): the API token that sent it (what a token's GPU
    budget is spent by) and the run it replays. No row: none of these."""

    __tablename__ = "submission_origins"

    submission_id: Mapped[int] = mapped_column(
        Id, ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    token_id: Mapped[int | None] = mapped_column(Id, ForeignKey("api_tokens.id", ondelete="SET NULL"), index=True)
    replay_of: Mapped[int | None] = mapped_column(
        Id, ForeignKey("submissions.id", ondelete="CASCADE"), comment="the submission whose run this re-times"
    )


class IdempotencyKey(Base):
    """A submitting request's ``Idempotency-Key`` (issue 33, ``leaderboards/idempotency.py``), per account: the
    request's digest and, once answered, the answer a retry gets back. Kept until ``expires_at``."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("user_id", "key"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    route: Mapped[str] = mapped_column(String(100), comment="which route the key was first used on")
    body_sha256: Mapped[str] = mapped_column(String(64), comment="digest of the request's fields and files")
    status_code: Mapped[int | None] = mapped_column(Integer(), comment="None while the first request runs")
    response: Mapped[Any | None] = mapped_column(JSONType, comment="the first answer's JSON body")
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class GpuBudget(Base):
    """GPU seconds an account or one API token may spend per period (issue 33, ``leaderboards/budgets.py``): exactly
    one of ``user_id`` and ``token_id`` is set. No row: no budget."""

    __tablename__ = "gpu_budgets"

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    user_id: Mapped[int | None] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"), unique=True)
    token_id: Mapped[int | None] = mapped_column(Id, ForeignKey("api_tokens.id", ondelete="CASCADE"), unique=True)
    seconds: Mapped[float] = mapped_column(Float(), comment="evaluation seconds on devices per period")
    period_s: Mapped[int] = mapped_column(Integer(), comment="the period; periods start at multiples of it (UTC)")
    set_by: Mapped[str] = mapped_column(String(200), default="")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class LinkedAccount(Base):
    """Another sign-in of an account (web/pages/oauth.py): signing in with this provider's account signs in as the
    linked kernelcup account. Made when a signed-in person links GitHub on /signin; a GitHub account signs in as
    one account only (its own ``github:<id>`` if it has one, else the one it is linked to)."""

    __tablename__ = "linked_accounts"
    __table_args__ = (UniqueConstraint("provider", "subject"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    provider: Mapped[str] = mapped_column(String(16), comment="the sign-in provider: github")
    subject: Mapped[str] = mapped_column(String(64), comment="the provider's account id")
    created_at: Mapped[datetime] = _created()


class Hack(Base):
    """An input hack against a board (issue 35, ``leaderboards/board_hacks.py``) on one device: a case of the
    problem's ``hack_space`` that an account submitted, run below every person's job (the reference first, then each
    device's top entries, correctness only). ``case`` is secret once it broke an entry (it is then a held-out case of
    the board): no surface shows it; ``outcomes`` is what the hacker reads (entry, rank, user, verdict)."""

    __tablename__ = "hacks"
    __table_args__ = (Index(None, "status", "device"), Index(None, "leaderboard_id", "user_id"))

    id: Mapped[int] = mapped_column(Id, primary_key=True)
    leaderboard_id: Mapped[int] = mapped_column(Id, ForeignKey("leaderboards.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(Id, ForeignKey("users.id", ondelete="CASCADE"))
    device: Mapped[str] = mapped_column(String(32))
    case: Mapped[dict[str, Any]] = mapped_column(JSONType, comment="secret: never shown on any surface")
    case_hash: Mapped[str] = mapped_column(String(64), comment="sha256 of the case's canonical JSON (one try a board)")
    status: Mapped[str] = mapped_column(
        String(16), comment="queued, running, done, refused (the reference fails on it), failed (the runner's fault)"
    )
    outcomes: Mapped[list[Any] | None] = mapped_column(
        JSONType, comment="each entry run: submission id, rank, user, verdict, broken (no code, no message)"
    )
    broken: Mapped[int] = mapped_column(Integer(), default=0, comment="entries it broke")
    attempts: Mapped[int] = mapped_column(Integer(), default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    note: Mapped[str | None] = mapped_column(StoredText(), comment="why it was refused, or (admins) could not run")
    created_at: Mapped[datetime] = _created()
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    token_id: Mapped[int | None] = mapped_column(
        Id, ForeignKey("api_tokens.id", ondelete="SET NULL"), comment="the API token that sent it (its GPU budget)"
    )
    gpu_seconds: Mapped[float] = mapped_column(
        Float(), default=0.0, server_default="0", comment="evaluation seconds its runs used on the device (budgets)"
    )
