"""Budgets that cannot be escaped (the red team's findings): an input hack records the API token that sent it and the
evaluation seconds its runs used (``hacks.token_id``, ``hacks.gpu_seconds``), so the account's and the token's GPU
budgets count them; an API token records the token it was made with (``api_tokens.made_with_token_id``), so a token a
program was given revokes only itself and the tokens made with it, never the person's own.

Revision ID: 0023
Revises: 0022
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | Sequence[str] | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("hacks") as batch:
        batch.add_column(
            sa.Column("token_id", Id, nullable=True, comment="the API token that sent it (its GPU budget)")
        )
        batch.add_column(
            sa.Column(
                "gpu_seconds",
                sa.Float(),
                nullable=False,
                server_default="0",
                comment="evaluation seconds its runs used on the device (budgets)",
            )
        )
        batch.create_foreign_key(
            op.f("fk_hacks_token_id_api_tokens"), "api_tokens", ["token_id"], ["id"], ondelete="SET NULL"
        )
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(
            sa.Column(
                "made_with_token_id",
                Id,
                nullable=True,
                comment="the token it was made with (POST /me/tokens, a CLI sign-in approved by a pasted token): it "
                "may revoke only itself and the tokens made with it; null: made by the person (Discord, the shell, a "
                "web sign-in)",
            )
        )
        batch.create_foreign_key(
            op.f("fk_api_tokens_made_with_token_id_api_tokens"),
            "api_tokens",
            ["made_with_token_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_constraint(op.f("fk_api_tokens_made_with_token_id_api_tokens"), type_="foreignkey")
        batch.drop_column("made_with_token_id")
    with op.batch_alter_table("hacks") as batch:
        batch.drop_constraint(op.f("fk_hacks_token_id_api_tokens"), type_="foreignkey")
        batch.drop_column("gpu_seconds")
        batch.drop_column("token_id")
