"""Timed held-out cases and re-timing rounds (issue 29).

- ``system_tests`` of a problem with ``holdout_timed: true`` keep, besides their counts, each held-out case's timing
  statistics (in the cases' order, never a case) and the entry's figure over them (the problem's ranking rule over
  their medians). Final standings rank by them with the public benchmarks.
- ``retime_rounds``: one round of a re-timing of a device's finalists (each entry's benchmark run, interleaved, on one
  machine), spread over the live workers serving the device and leased one by one (``leaderboards/retiming.py``).

Revision ID: 0017
Revises: 0014
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSONType = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
NOW = sa.text("CURRENT_TIMESTAMP")


def upgrade() -> None:
    op.add_column(
        "system_tests",
        sa.Column(
            "timings",
            JSONType,
            nullable=True,
            comment="held-out cases timed (holdout_timed): each case's timing statistics, in order; no case",
        ),
    )
    op.add_column(
        "system_tests",
        sa.Column(
            "score_ns",
            sa.Float(),
            nullable=True,
            comment="the problem's rule over the timed held-out cases",
        ),
    )
    op.create_table(
        "retime_rounds",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("batch", sa.String(length=32), nullable=False, comment="the rounds queued together share it"),
        sa.Column(
            "seed", sa.BigInteger(), nullable=False, comment="the batch's inputs: every entry times the same ones"
        ),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False, comment="admin or deadline"),
        sa.Column("entries", JSONType, nullable=False, comment="submission ids in this round's order"),
        sa.Column(
            "status",
            sa.String(length=16),
            nullable=False,
            comment="queued, running, done, failed (not the entries' fault)",
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("assigned_worker", sa.String(length=200), nullable=True, comment="the live worker it was spread to"),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("worker_id", sa.String(length=200), nullable=True, comment="the worker (machine) that ran it"),
        sa.Column(
            "machine", sa.String(length=200), nullable=True, comment="the runtime it reported, e.g. 'torch 2.6.0'"
        ),
        sa.Column(
            "results",
            JSONType,
            nullable=True,
            comment="per submission: passed, score_ns and each case's timing statistics",
        ),
        sa.Column("note", sa.Text(), nullable=True, comment="admins only: why a round could not run"),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=NOW, nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_retime_rounds_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_retime_rounds")),
    )
    op.create_index(op.f("ix_retime_rounds_status_device"), "retime_rounds", ["status", "device"], unique=False)
    op.create_index(
        op.f("ix_retime_rounds_leaderboard_id_device_batch"),
        "retime_rounds",
        ["leaderboard_id", "device", "batch"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_retime_rounds_leaderboard_id_device_batch"), table_name="retime_rounds")
    op.drop_index(op.f("ix_retime_rounds_status_device"), table_name="retime_rounds")
    op.drop_table("retime_rounds")
    with op.batch_alter_table("system_tests") as batch:
        batch.drop_column("score_ns")
        batch.drop_column("timings")
