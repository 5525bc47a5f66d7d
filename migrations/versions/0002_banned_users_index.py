"""Partial index on banned users, so a ranking subtracts the few banned ones without scanning every user.

Revision ID: 0002
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_users_banned",
        "users",
        ["id"],
        unique=False,
        postgresql_where=sa.text("is_banned"),
        sqlite_where=sa.text("is_banned"),
    )


def downgrade() -> None:
    op.drop_index("ix_users_banned", table_name="users")
