"""A compare may ask for kernel metrics (issue 30, ``profile``): after the rounds, each case of both files is profiled
under Nsight Compute and the comparison carries the metric deltas (``runners.compare_profile``).

Revision ID: 0020
Revises: 0019
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("comparisons") as batch:
        batch.add_column(
            sa.Column(
                "profile",
                sa.Boolean(),
                nullable=False,
                server_default=sa.false(),
                comment="after the rounds, profile each case of both files (kernel metric deltas)",
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("comparisons") as batch:
        batch.drop_column("profile")
