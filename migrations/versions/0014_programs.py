"""Kernel-generation programs as first-class users (issue 33).

- ``batches`` and ``batch_items``: candidates sent in one call, each with its submission or the error that refused it.
- ``submission_origins``: the API token that sent a submission (what a token's GPU budget is spent by) and the run a
  replay re-times.
- ``idempotency_keys``: a submitting request's Idempotency-Key per account, its request's digest and first answer.
- ``gpu_budgets``: GPU seconds per period of an account or a token.

Revision ID: 0014
Revises: 0013
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
NOW = sa.text("CURRENT_TIMESTAMP")
JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "batches",
        sa.Column("id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("token_id", Id, nullable=True),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_batches_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["token_id"], ["api_tokens.id"], name=op.f("fk_batches_token_id_api_tokens"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_batches_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_batches")),
    )
    op.create_index(op.f("ix_batches_user_id"), "batches", ["user_id"], unique=False)
    op.create_table(
        "batch_items",
        sa.Column("batch_id", Id, autoincrement=False, nullable=False),
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("file_name", sa.String(length=255), nullable=False),
        sa.Column("submission_id", Id, nullable=True, comment="None: refused (see error)"),
        sa.Column("error", JSONType, nullable=True, comment="a refused candidate's code, message, field"),
        sa.ForeignKeyConstraint(
            ["batch_id"], ["batches.id"], name=op.f("fk_batch_items_batch_id_batches"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_batch_items_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("batch_id", "position", name=op.f("pk_batch_items")),
    )
    op.create_index(op.f("ix_batch_items_submission_id"), "batch_items", ["submission_id"], unique=False)
    op.create_table(
        "submission_origins",
        sa.Column("submission_id", Id, autoincrement=False, nullable=False),
        sa.Column("token_id", Id, nullable=True),
        sa.Column("replay_of", Id, nullable=True, comment="the submission whose run this re-times"),
        sa.ForeignKeyConstraint(
            ["replay_of"],
            ["submissions.id"],
            name=op.f("fk_submission_origins_replay_of_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_submission_origins_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["token_id"],
            ["api_tokens.id"],
            name=op.f("fk_submission_origins_token_id_api_tokens"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_submission_origins")),
    )
    op.create_index(op.f("ix_submission_origins_token_id"), "submission_origins", ["token_id"], unique=False)
    op.create_table(
        "idempotency_keys",
        sa.Column("id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("route", sa.String(length=100), nullable=False, comment="which route the key was first used on"),
        sa.Column(
            "body_sha256", sa.String(length=64), nullable=False, comment="digest of the request's fields and files"
        ),
        sa.Column("status_code", sa.Integer(), nullable=True, comment="None while the first request runs"),
        sa.Column("response", JSONType, nullable=True, comment="the first answer's JSON body"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_idempotency_keys_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_keys")),
        sa.UniqueConstraint("user_id", "key", name=op.f("uq_idempotency_keys_user_id_key")),
    )
    op.create_index(op.f("ix_idempotency_keys_expires_at"), "idempotency_keys", ["expires_at"], unique=False)
    op.create_table(
        "gpu_budgets",
        sa.Column("id", Id, nullable=False),
        sa.Column("user_id", Id, nullable=True),
        sa.Column("token_id", Id, nullable=True),
        sa.Column("seconds", sa.Float(), nullable=False, comment="evaluation seconds on devices per period"),
        sa.Column(
            "period_s", sa.Integer(), nullable=False, comment="the period; periods start at multiples of it (UTC)"
        ),
        sa.Column("set_by", sa.String(length=200), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["token_id"], ["api_tokens.id"], name=op.f("fk_gpu_budgets_token_id_api_tokens"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_gpu_budgets_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpu_budgets")),
        sa.UniqueConstraint("token_id", name=op.f("uq_gpu_budgets_token_id")),
        sa.UniqueConstraint("user_id", name=op.f("uq_gpu_budgets_user_id")),
    )


def downgrade() -> None:
    op.drop_table("gpu_budgets")
    op.drop_index(op.f("ix_idempotency_keys_expires_at"), table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
    op.drop_index(op.f("ix_submission_origins_token_id"), table_name="submission_origins")
    op.drop_table("submission_origins")
    op.drop_index(op.f("ix_batch_items_submission_id"), table_name="batch_items")
    op.drop_table("batch_items")
    op.drop_index(op.f("ix_batches_user_id"), table_name="batches")
    op.drop_table("batches")
