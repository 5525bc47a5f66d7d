"""After the deadline, and private boards (issue 29).

- ``late_submissions``: submissions made after their leaderboard's deadline (unranked practice), and the admin who let
  one in as ranked, why and when.
- ``invites``: invite codes to hidden leaderboards (only a code's SHA-256), with their uses and expiry.
- ``board_members``: who joined a hidden leaderboard, and with which code.
- ``invite_failures``: joins whose code let nobody in, counted per user to bound guessing (never the code).

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
NOW = sa.text("CURRENT_TIMESTAMP")


def upgrade() -> None:
    op.create_table(
        "late_submissions",
        sa.Column("submission_id", Id, autoincrement=False, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("admitted_by", sa.String(length=200), nullable=True, comment="the admin who let it in as ranked"),
        sa.Column("admitted_reason", sa.Text(), nullable=True, comment="why, shown with the entry"),
        sa.Column("admitted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_late_submissions_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_late_submissions_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_late_submissions")),
    )
    op.create_index(
        op.f("ix_late_submissions_leaderboard_id_submission_id"),
        "late_submissions",
        ["leaderboard_id", "submission_id"],
        unique=False,
    )
    op.create_table(
        "invites",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False, comment="sha256 hex of the code"),
        sa.Column(
            "prefix", sa.String(length=16), nullable=False, comment="the code's first characters, to recognise it"
        ),
        sa.Column("max_uses", sa.Integer(), nullable=False),
        sa.Column("uses", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_invites_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invites")),
        sa.UniqueConstraint("code_hash", name=op.f("uq_invites_code_hash")),
    )
    op.create_index(op.f("ix_invites_leaderboard_id"), "invites", ["leaderboard_id"], unique=False)
    op.create_table(
        "board_members",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("invite_id", Id, nullable=True),
        sa.Column("joined_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.ForeignKeyConstraint(
            ["invite_id"], ["invites.id"], name=op.f("fk_board_members_invite_id_invites"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_board_members_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_board_members_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_board_members")),
        sa.UniqueConstraint("leaderboard_id", "user_id", name=op.f("uq_board_members_leaderboard_id_user_id")),
    )
    op.create_index(op.f("ix_board_members_invite_id"), "board_members", ["invite_id"], unique=False)
    op.create_index(op.f("ix_board_members_user_id"), "board_members", ["user_id"], unique=False)
    op.create_table(
        "invite_failures",
        sa.Column("id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_invite_failures_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invite_failures")),
    )
    op.create_index(
        op.f("ix_invite_failures_user_id_created_at"), "invite_failures", ["user_id", "created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_invite_failures_user_id_created_at"), table_name="invite_failures")
    op.drop_table("invite_failures")
    op.drop_index(op.f("ix_board_members_user_id"), table_name="board_members")
    op.drop_index(op.f("ix_board_members_invite_id"), table_name="board_members")
    op.drop_table("board_members")
    op.drop_index(op.f("ix_invites_leaderboard_id"), table_name="invites")
    op.drop_table("invites")
    op.drop_index(op.f("ix_late_submissions_leaderboard_id_submission_id"), table_name="late_submissions")
    op.drop_table("late_submissions")
