"""Initial schema: users, leaderboards, code, submissions, jobs, runs, events, workers, rankings, audit.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 01:56:43.247826

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "audit_log",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=200), nullable=False),
        sa.Column(
            "detail", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_table(
        "leaderboards",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("deadline", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "task",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="snapshot: {'problem', 'task' (task.yml as JSON), 'files', 'templates'}",
        ),
        sa.Column("lang", sa.String(length=8), nullable=False),
        sa.Column(
            "devices", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("ranking_by", sa.String(length=8), nullable=False),
        sa.Column(
            "secret_seed", sa.BigInteger(), nullable=False, comment="server side only; never in a service result"
        ),
        sa.Column("creator", sa.String(length=100), nullable=False),
        sa.Column("visible", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("paused", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("rate_limit_per_hour", sa.Integer(), nullable=True),
        sa.Column("fingerprint", sa.String(length=64), nullable=False, comment="hash of what makes scores comparable"),
        sa.Column("problem_set", sa.String(length=200), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_leaderboards")),
        sa.UniqueConstraint("name", name=op.f("uq_leaderboards_name")),
    )
    op.create_table(
        "submission_code",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submission_code")),
        sa.UniqueConstraint("sha256", name=op.f("uq_submission_code_sha256")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "identity",
            sa.String(length=200),
            nullable=False,
            comment="'discord:<snowflake>' or 'local:<name>'; other identities later",
        ),
        sa.Column("discord_id", sa.BigInteger(), nullable=True),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("is_banned", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("ban_reason", sa.Text(), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("discord_id", name=op.f("uq_users_discord_id")),
        sa.UniqueConstraint("identity", name=op.f("uq_users_identity")),
    )
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("hostname", sa.String(length=200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column(
            "devices", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column(
            "started_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workers")),
    )
    op.create_index(op.f("ix_workers_heartbeat_at"), "workers", ["heartbeat_at"], unique=False)
    op.create_table(
        "submissions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("leaderboard_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("code_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("file_name", sa.String(length=255), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["code_id"], ["submission_code.id"], name=op.f("fk_submissions_code_id_submission_code")
        ),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_submissions_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_submissions_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submissions")),
    )
    op.create_index(op.f("ix_submissions_code_id"), "submissions", ["code_id"], unique=False)
    op.create_index(
        op.f("ix_submissions_leaderboard_id_user_id_created_at"),
        "submissions",
        ["leaderboard_id", "user_id", "created_at"],
        unique=False,
    )
    op.create_index(op.f("ix_submissions_user_id_created_at"), "submissions", ["user_id", "created_at"], unique=False)
    op.create_table(
        "best_scores",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("leaderboard_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("submission_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_best_scores_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_best_scores_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_best_scores_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_best_scores")),
        sa.UniqueConstraint(
            "leaderboard_id", "device", "user_id", name=op.f("uq_best_scores_leaderboard_id_device_user_id")
        ),
    )
    op.create_index(
        "ix_best_scores_ranking",
        "best_scores",
        ["leaderboard_id", "device", "score", "submitted_at", "submission_id"],
        unique=False,
    )
    op.create_index(op.f("ix_best_scores_submission_id"), "best_scores", ["submission_id"], unique=False)
    op.create_index(op.f("ix_best_scores_user_id"), "best_scores", ["user_id"], unique=False)
    op.create_table(
        "jobs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("submission_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=True, comment="the worst verdict of the job's runs"),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("remote_ref", sa.String(length=500), nullable=True),
        sa.Column("error", sa.Text(), nullable=True, comment="user-readable"),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["submission_id"], ["submissions.id"], name=op.f("fk_jobs_submission_id_submissions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_index(
        op.f("ix_jobs_status_device_next_attempt_at"), "jobs", ["status", "device", "next_attempt_at"], unique=False
    )
    op.create_index(op.f("ix_jobs_status_lease_expires_at"), "jobs", ["status", "lease_expires_at"], unique=False)
    op.create_index(op.f("ix_jobs_submission_id"), "jobs", ["submission_id"], unique=False)
    op.create_table(
        "rank_changes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("leaderboard_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("submission_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("old_rank", sa.Integer(), nullable=True),
        sa.Column("new_rank", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("previous_score", sa.Float(), nullable=True, comment="the user's own previous best"),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.Column("announced_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("announced_by", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_rank_changes_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_rank_changes_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_rank_changes_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rank_changes")),
    )
    op.create_index(op.f("ix_rank_changes_announced_at_id"), "rank_changes", ["announced_at", "id"], unique=False)
    op.create_index(op.f("ix_rank_changes_leaderboard_id"), "rank_changes", ["leaderboard_id"], unique=False)
    op.create_table(
        "job_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("phase", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_job_events_job_id_jobs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_events")),
    )
    op.create_index(op.f("ix_job_events_job_id_id"), "job_events", ["job_id", "id"], unique=False)
    op.create_table(
        "runs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("submission_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("secret", sa.Boolean(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=False),
        sa.Column("score", sa.Float(), nullable=True, comment="ns, lower is better"),
        sa.Column(
            "fingerprint", sa.String(length=64), nullable=False, comment="the leaderboard's fingerprint when recorded"
        ),
        sa.Column(
            "result",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
            comment="the RunResult",
        ),
        sa.Column(
            "system", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_runs_job_id_jobs"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["submission_id"], ["submissions.id"], name=op.f("fk_runs_submission_id_submissions"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("job_id", "secret", name=op.f("uq_runs_job_id_secret")),
    )
    op.create_index(op.f("ix_runs_submission_id"), "runs", ["submission_id"], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index(op.f("ix_runs_submission_id"), table_name="runs")
    op.drop_table("runs")
    op.drop_index(op.f("ix_job_events_job_id_id"), table_name="job_events")
    op.drop_table("job_events")
    op.drop_index(op.f("ix_rank_changes_leaderboard_id"), table_name="rank_changes")
    op.drop_index(op.f("ix_rank_changes_announced_at_id"), table_name="rank_changes")
    op.drop_table("rank_changes")
    op.drop_index(op.f("ix_jobs_submission_id"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_status_lease_expires_at"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_status_device_next_attempt_at"), table_name="jobs")
    op.drop_table("jobs")
    op.drop_index(op.f("ix_best_scores_user_id"), table_name="best_scores")
    op.drop_index(op.f("ix_best_scores_submission_id"), table_name="best_scores")
    op.drop_index("ix_best_scores_ranking", table_name="best_scores")
    op.drop_table("best_scores")
    op.drop_index(op.f("ix_submissions_user_id_created_at"), table_name="submissions")
    op.drop_index(op.f("ix_submissions_leaderboard_id_user_id_created_at"), table_name="submissions")
    op.drop_index(op.f("ix_submissions_code_id"), table_name="submissions")
    op.drop_table("submissions")
    op.drop_index(op.f("ix_workers_heartbeat_at"), table_name="workers")
    op.drop_table("workers")
    op.drop_table("users")
    op.drop_table("submission_code")
    op.drop_table("leaderboards")
    op.drop_table("audit_log")
