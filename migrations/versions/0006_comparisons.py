"""Compare as a mode of the service: the second file, the rounds and the result of a compare submission.

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "comparisons",
        sa.Column("submission_id", Id, autoincrement=False, nullable=False),
        sa.Column("code_b_id", Id, nullable=False),
        sa.Column("file_b_name", sa.String(length=255), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False, comment="even; each round runs both files once"),
        sa.Column("result", JSONType, nullable=True, comment="the runners.contract.Comparison"),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_comparisons_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["code_b_id"], ["submission_code.id"], name=op.f("fk_comparisons_code_b_id_submission_code")
        ),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_comparisons")),
    )
    op.create_index(op.f("ix_comparisons_code_b_id"), "comparisons", ["code_b_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_comparisons_code_b_id"), table_name="comparisons")
    op.drop_table("comparisons")
