"""The problem's name in its own column, so listing leaderboards never loads a task snapshot.

Revision ID: 0004
Revises: 0003
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("leaderboards") as batch:
        batch.add_column(
            sa.Column(
                "problem",
                sa.String(length=200),
                server_default="",
                nullable=False,
                comment="the problem folder's name: lists never load the task",
            )
        )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("UPDATE leaderboards SET problem = COALESCE(task ->> 'problem', '')")
    else:
        op.execute("UPDATE leaderboards SET problem = COALESCE(json_extract(task, '$.problem'), '')")


def downgrade() -> None:
    with op.batch_alter_table("leaderboards") as batch:
        batch.drop_column("problem")
