"""Linked sign-ins (issue 31): a GitHub account linked to an existing kernelcup account signs in as it.

Revision ID: 0015
Revises: 0018
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "linked_accounts",
        sa.Column("id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("provider", sa.String(length=16), nullable=False, comment="the sign-in provider: github"),
        sa.Column("subject", sa.String(length=64), nullable=False, comment="the provider's account id"),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_linked_accounts_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_linked_accounts")),
        sa.UniqueConstraint("provider", "subject", name=op.f("uq_linked_accounts_provider_subject")),
    )
    op.create_index(op.f("ix_linked_accounts_user_id"), "linked_accounts", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_linked_accounts_user_id"), table_name="linked_accounts")
    op.drop_table("linked_accounts")
