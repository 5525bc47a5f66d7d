"""A worker row says what it runs besides jobs (issue 33, preemption): ``workers.busy_with`` holds a label for each
input hack, system test, re-timing round or rejudge the worker runs now (work that holds a place but no job row),
so ``JobQueue.preempt_for_person`` and the program lane count that worker as busy, not as an idle place.

Revision ID: 0022
Revises: 0021
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | Sequence[str] | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workers") as batch:
        batch.add_column(
            sa.Column(
                "busy_with",
                sa.Text(),
                nullable=True,
                comment="the work besides jobs it runs now, one label each, '; '-joined (input hack, system test, "
                "re-timing round, rejudge): it holds a place but no job row; null: none",
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("workers") as batch:
        batch.drop_column("busy_with")
