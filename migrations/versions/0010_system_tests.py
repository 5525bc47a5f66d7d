"""System tests and final standings (issue 29): each top entry's run on the problem's held-out cases (counts only), and
a leaderboard's frozen final standings per device with the per-case statistics they were computed from.

Revision ID: 0010
Revises: 0009
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
NOW = sa.text("CURRENT_TIMESTAMP")


def upgrade() -> None:
    op.create_table(
        "system_tests",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("submission_id", Id, nullable=False),
        sa.Column(
            "status",
            sa.String(length=16),
            nullable=False,
            comment="queued, running, done, failed (not the entry's fault)",
        ),
        sa.Column("trigger", sa.String(length=16), nullable=False, comment="admin or deadline"),
        sa.Column("cases", sa.Integer(), nullable=False, comment="held-out cases run"),
        sa.Column("passed", sa.Integer(), nullable=True, comment="held-out cases passed; None until done"),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.Text(), nullable=True, comment="admins only: why a test could not run"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_system_tests_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_system_tests_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_system_tests")),
        sa.UniqueConstraint(
            "leaderboard_id",
            "device",
            "submission_id",
            name=op.f("uq_system_tests_leaderboard_id_device_submission_id"),
        ),
    )
    op.create_index(op.f("ix_system_tests_status_device"), "system_tests", ["status", "device"], unique=False)
    op.create_index(op.f("ix_system_tests_submission_id"), "system_tests", ["submission_id"], unique=False)
    op.create_table(
        "final_standings",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("ranking_by", sa.String(length=8), nullable=False),
        sa.Column("entries", JSONType, nullable=False, comment="each: user, submission, coverage, per-case stats"),
        sa.Column("excluded", JSONType, nullable=False, comment="entries that failed a held-out case: counts only"),
        sa.Column("frozen_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_final_standings_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_final_standings")),
        sa.UniqueConstraint("leaderboard_id", "device", name=op.f("uq_final_standings_leaderboard_id_device")),
    )


def downgrade() -> None:
    op.drop_table("final_standings")
    op.drop_index(op.f("ix_system_tests_submission_id"), table_name="system_tests")
    op.drop_index(op.f("ix_system_tests_status_device"), table_name="system_tests")
    op.drop_table("system_tests")
