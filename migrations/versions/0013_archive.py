"""The open kernel archive (issue 34).

- ``submission_licences``: the licence each submission's author chose (no row: ``none``, never published), and when
  it was withdrawn.
- ``archive_accounts``: a user's default licence and the name the archive gives them.
- ``archive_policies``: boards that publish at once (no row: after the deadline).

Revision ID: 0013
Revises: 0012
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "submission_licences",
        sa.Column("submission_id", Id, autoincrement=False, nullable=False),
        sa.Column(
            "licence",
            sa.String(length=16),
            nullable=False,
            comment="'none' or an SPDX id of leaderboards.licences.LICENCES",
        ),
        sa.Column("withdrawn_at", sa.DateTime(timezone=True), nullable=True, comment="unpublished by its author"),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_submission_licences_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_submission_licences")),
    )
    op.create_table(
        "archive_accounts",
        sa.Column("user_id", Id, autoincrement=False, nullable=False),
        sa.Column("default_licence", sa.String(length=16), nullable=False),
        sa.Column(
            "author_name",
            sa.String(length=100),
            nullable=True,
            comment="how the archive names them; None: their leaderboard name; '' : anonymous",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_archive_accounts_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_archive_accounts")),
    )
    op.create_table(
        "archive_policies",
        sa.Column("leaderboard_id", Id, autoincrement=False, nullable=False),
        sa.Column(
            "at_once", sa.Boolean(), nullable=False, comment="publish as soon as they run (practice boards)"
        ),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_archive_policies_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("leaderboard_id", name=op.f("pk_archive_policies")),
    )


def downgrade() -> None:
    op.drop_table("archive_policies")
    op.drop_table("archive_accounts")
    op.drop_table("submission_licences")
