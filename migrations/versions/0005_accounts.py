"""HTTP API: API tokens, program accounts, public code after a deadline.

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column(
                "is_program",
                sa.Boolean(),
                server_default=sa.text("false"),
                nullable=False,
                comment="a program (e.g. a kernel generator), not a person",
            )
        )
    with op.batch_alter_table("leaderboards") as batch:
        batch.add_column(
            sa.Column(
                "code_public_after_deadline",
                sa.Boolean(),
                server_default=sa.text("false"),
                nullable=False,
                comment="ranked entries' code is public after the deadline",
            )
        )
    op.create_table(
        "api_tokens",
        sa.Column("id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False, comment="what the owner calls it"),
        sa.Column("token_hash", sa.String(length=64), nullable=False, comment="sha256 hex of the token"),
        sa.Column(
            "prefix", sa.String(length=16), nullable=False, comment="the token's first characters, to recognise it"
        ),
        sa.Column("scopes", JSONType, nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_api_tokens_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_index(op.f("ix_api_tokens_user_id"), "api_tokens", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_api_tokens_user_id"), table_name="api_tokens")
    op.drop_table("api_tokens")
    with op.batch_alter_table("leaderboards") as batch:
        batch.drop_column("code_public_after_deadline")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("is_program")
