"""The ranked score from both runs of a ranked job (issue 28): the pooled score, whether a case ran clearly slower on
the secret-seed inputs (flagged for an admin), and the note the author is shown.

Jobs recorded before keep no figure (NULL) and rank, as they did, by the slower of their two runs' scores.

Revision ID: 0008
Revises: 0007
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "jobs",
        sa.Column(
            "ranked_score",
            sa.Float(),
            nullable=True,
            comment="ns: a ranked job's score from both its runs (leaderboards.pooling); None: the slower run's",
        ),
    )
    op.add_column(
        "jobs",
        sa.Column(
            "ranked_flagged",
            sa.Boolean(),
            server_default=sa.false(),
            nullable=False,
            comment="a case ran clearly slower on the secret inputs",
        ),
    )
    op.add_column(
        "jobs", sa.Column("ranked_note", sa.Text(), nullable=True, comment="user-readable: why not a plain pooling")
    )


def downgrade() -> None:
    # jobs keeps its AUTOINCREMENT through SQLite's copy-and-move (0003_faults)
    with op.batch_alter_table("jobs", recreate="always", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_column("ranked_note")
        batch.drop_column("ranked_flagged")
        batch.drop_column("ranked_score")
