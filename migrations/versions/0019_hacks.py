"""Input hacks against a board (issue 35): one row per hack and device, queued below every person's job.

Revision ID: 0019
Revises: 0015
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
NOW = sa.text("CURRENT_TIMESTAMP")


def upgrade() -> None:
    op.create_table(
        "hacks",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("case", JSONType, nullable=False, comment="secret: never shown on any surface"),
        sa.Column(
            "case_hash",
            sa.String(length=64),
            nullable=False,
            comment="sha256 of the case's canonical JSON (one try a board)",
        ),
        sa.Column(
            "status",
            sa.String(length=16),
            nullable=False,
            comment="queued, running, done, refused (the reference fails on it), failed (the runner's fault)",
        ),
        sa.Column(
            "outcomes",
            JSONType,
            nullable=True,
            comment="each entry run: submission id, rank, user, verdict, broken (no code, no message)",
        ),
        sa.Column("broken", sa.Integer(), nullable=False, comment="entries it broke"),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.Text(), nullable=True, comment="why it was refused, or (admins) could not run"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_hacks_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_hacks_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_hacks")),
    )
    op.create_index(op.f("ix_hacks_status_device"), "hacks", ["status", "device"], unique=False)
    op.create_index(op.f("ix_hacks_leaderboard_id_user_id"), "hacks", ["leaderboard_id", "user_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_hacks_leaderboard_id_user_id"), table_name="hacks")
    op.drop_index(op.f("ix_hacks_status_device"), table_name="hacks")
    op.drop_table("hacks")
