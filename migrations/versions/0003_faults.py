"""Faults and fairness: ids never reused on SQLite, round-robin claims, worker health.

- ``jobs`` and ``submissions`` become ``AUTOINCREMENT`` tables on SQLite, so an id is never handed out again after
  a deletion (a late write of a worker, or a status message following a submission, can never land on another
  one). PostgreSQL sequences never reuse ids already. SQLite needs the table rebuilt for that (``env.py`` turns
  foreign keys off around migrations there, so the rebuild does not cascade into runs and events).
- ``users.last_claimed_at``: when a worker last took one of the user's jobs; claims serve the user who waited
  longest first (round-robin between users, then by age).
- ``workers.healthy``, ``health_note``, ``unhealthy_since``: a worker that fails its self-check or fails jobs in
  a row stops claiming and says why.

Revision ID: 0003
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

AUTOINCREMENT_TABLES = ("submissions", "jobs")


def upgrade() -> None:
    op.add_column(
        "users",
        sa.Column(
            "last_claimed_at",
            sa.DateTime(timezone=True),
            nullable=True,
            comment="when a worker last took one of this user's jobs: claims go round-robin by it",
        ),
    )
    op.add_column("workers", sa.Column("healthy", sa.Boolean(), server_default=sa.true(), nullable=False))
    op.add_column(
        "workers",
        sa.Column("health_note", sa.Text(), nullable=True, comment="why the worker stopped claiming, for operators"),
    )
    op.add_column("workers", sa.Column("unhealthy_since", sa.DateTime(timezone=True), nullable=True))
    if op.get_bind().dialect.name == "sqlite":
        for table in AUTOINCREMENT_TABLES:
            with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": True}):
                pass


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in AUTOINCREMENT_TABLES:
            with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": False}):
                pass
    with op.batch_alter_table("workers") as batch:
        batch.drop_column("unhealthy_since")
        batch.drop_column("health_note")
        batch.drop_column("healthy")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("last_claimed_at")
