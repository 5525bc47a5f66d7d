"""Moderation, rejudge and runtime drift (issue 29).

- ``submissions`` gains a moderation state (flagged, quarantined, hacked, cleared) with who set it, when and why; each
  change is also an ``audit_log`` row. Quarantined and hacked submissions rank nowhere.
- ``rejudges``: an entry re-run on the queue's lowest priority (an admin's rejudge, or a runtime change's re-timing),
  with its old and new ranked score, the drift between them, and the reference baseline's drift.
- ``runner_systems``: each runtime (driver, CUDA, torch, Triton, nvcc, GPU) a device's runs reported, first seen when.
- ``admin_alerts``: what an admin must look at (a reference that drifted); an open one may hold a board's
  announcements.

Revision ID: 0011
Revises: 0010
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
NOW = sa.text("CURRENT_TIMESTAMP")


def upgrade() -> None:
    op.add_column(
        "submissions",
        sa.Column(
            "moderation",
            sa.String(length=16),
            nullable=True,
            comment="None, flagged, quarantined, hacked or cleared (leaderboards.moderation)",
        ),
    )
    op.add_column(
        "submissions", sa.Column("moderation_reason", sa.Text(), nullable=True, comment="shown to the author")
    )
    op.add_column("submissions", sa.Column("moderated_by", sa.String(length=200), nullable=True))
    op.add_column("submissions", sa.Column("moderated_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(op.f("ix_submissions_moderation"), "submissions", ["moderation"], unique=False)
    op.create_table(
        "rejudges",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("submission_id", Id, nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False, comment="admin or runtime"),
        sa.Column("status", sa.String(length=16), nullable=False, comment="queued, running, done, failed"),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("old_score", sa.Float(), nullable=True, comment="ns: the entry's ranked score when queued"),
        sa.Column("new_score", sa.Float(), nullable=True, comment="ns: the rejudge's ranked score"),
        sa.Column("drift", sa.Float(), nullable=True, comment="new / old - 1"),
        sa.Column("passed", sa.Boolean(), nullable=True, comment="both runs of the rejudge passed"),
        sa.Column("reference_drift", sa.Float(), nullable=True, comment="the reference's medians, new / old - 1"),
        sa.Column("runtime", sa.String(length=200), nullable=True, comment="e.g. 'torch 2.6.0': what it ran on"),
        sa.Column("system", JSONType, nullable=True, comment="the rejudge's SystemInfo"),
        sa.Column("requested_by", sa.String(length=200), nullable=False),
        sa.Column("note", sa.Text(), nullable=True, comment="admins only: why it failed"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_rejudges_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_rejudges_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rejudges")),
    )
    op.create_index(op.f("ix_rejudges_status_device"), "rejudges", ["status", "device"], unique=False)
    op.create_index(op.f("ix_rejudges_submission_id_device"), "rejudges", ["submission_id", "device"], unique=False)
    op.create_table(
        "runner_systems",
        sa.Column("id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("system", JSONType, nullable=False, comment="driver, cuda, torch, triton, nvcc, gpu_name"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runner_systems")),
        sa.UniqueConstraint("device", "fingerprint", name=op.f("uq_runner_systems_device_fingerprint")),
    )
    op.create_table(
        "admin_alerts",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=True),
        sa.Column("device", sa.String(length=32), nullable=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("holds_announcements", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_by", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_admin_alerts_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_alerts")),
    )
    op.create_index(op.f("ix_admin_alerts_resolved_at"), "admin_alerts", ["resolved_at"], unique=False)
    op.create_index(op.f("ix_audit_log_created_at"), "audit_log", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_audit_log_created_at"), table_name="audit_log")
    op.drop_index(op.f("ix_admin_alerts_resolved_at"), table_name="admin_alerts")
    op.drop_table("admin_alerts")
    op.drop_table("runner_systems")
    op.drop_index(op.f("ix_rejudges_submission_id_device"), table_name="rejudges")
    op.drop_index(op.f("ix_rejudges_status_device"), table_name="rejudges")
    op.drop_table("rejudges")
    op.drop_index(op.f("ix_submissions_moderation"), table_name="submissions")
    # submissions keeps its AUTOINCREMENT through SQLite's copy-and-move (as jobs does in 0008)
    with op.batch_alter_table("submissions", recreate="always", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_column("moderated_at")
        batch.drop_column("moderated_by")
        batch.drop_column("moderation_reason")
        batch.drop_column("moderation")
