"""Web sessions kept on the server (issue 37): the pages' cookie carries a session id, no longer the API token, and
signing out ends the session here, so a copied cookie is dead after sign-out.

Revision ID: 0009
Revises: 0008
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", Id, nullable=False),
        sa.Column("sid_hash", sa.String(length=64), nullable=False, comment="sha256 hex of the cookie's session id"),
        sa.Column("token_id", Id, nullable=False),
        sa.Column(
            "via", sa.String(length=16), nullable=False, comment="token (pasted) or discord (its token ends with it)"
        ),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True, comment="signed out"),
        sa.ForeignKeyConstraint(
            ["token_id"], ["api_tokens.id"], name=op.f("fk_web_sessions_token_id_api_tokens"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_sessions")),
        sa.UniqueConstraint("sid_hash", name=op.f("uq_web_sessions_sid_hash")),
    )
    op.create_index(op.f("ix_web_sessions_token_id"), "web_sessions", ["token_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_web_sessions_token_id"), table_name="web_sessions")
    op.drop_table("web_sessions")
