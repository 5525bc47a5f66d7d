"""The archive's kept table of licensed public runs (issue 34, ``leaderboards/archive.py``): ``archive_entries``, one
row per public run of a submission whose licence is not ``none`` and not withdrawn, with the columns the archive
filters and sorts by, indexed for its pages (newest first and fastest first, by problem, device and board).

Filled here from the stored runs and licences (the same values ``leaderboards.archive.refresh_archive_entries``
writes when a run is recorded or a licence changes).

Revision ID: 0021
Revises: 0020
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
BATCH = 1000
INDEXES = {
    "ix_archive_entries_newest": ["submitted_at", "submission_id", "device"],
    "ix_archive_entries_problem_newest": ["problem", "submitted_at", "submission_id", "device"],
    "ix_archive_entries_problem_device_newest": ["problem", "device", "submitted_at", "submission_id"],
    "ix_archive_entries_board_newest": ["leaderboard_id", "submitted_at", "submission_id"],
    "ix_archive_entries_speed": ["score", "submission_id", "device"],
    "ix_archive_entries_problem_speed": ["problem", "score", "submission_id", "device"],
    "ix_archive_entries_problem_device_speed": ["problem", "device", "score", "submission_id"],
}


def upgrade() -> None:
    entries = op.create_table(
        "archive_entries",
        sa.Column("run_id", Id, autoincrement=False, nullable=False, comment="the public run"),
        sa.Column("submission_id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("problem", sa.String(length=200), nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True, comment="the public run's score, ns"),
        sa.Column("speedup", sa.Float(), nullable=True, comment="over the reference, geometric mean of the cases"),
        sa.Column("roofline_share", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_archive_entries_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_archive_entries_run_id_runs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_archive_entries_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_archive_entries_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_archive_entries")),
    )
    op.create_index(op.f("ix_archive_entries_submission_id"), "archive_entries", ["submission_id"], unique=False)
    op.create_index(op.f("ix_archive_entries_user_id"), "archive_entries", ["user_id"], unique=False)
    for name, columns in INDEXES.items():
        op.create_index(name, "archive_entries", columns, unique=False)
    _backfill(entries)


def _backfill(entries: sa.Table) -> None:
    from leaderboards.archive import run_figures
    from leaderboards.models import JSONType, UTCDateTime

    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT r.id, r.submission_id, r.device, s.leaderboard_id, l.problem, s.user_id, s.created_at, r.passed, "
            "r.score, r.result FROM runs r JOIN submissions s ON s.id = r.submission_id "
            "JOIN leaderboards l ON l.id = s.leaderboard_id "
            "JOIN submission_licences c ON c.submission_id = s.id "
            "WHERE r.secret = :no AND c.licence <> 'none' AND c.withdrawn_at IS NULL ORDER BY r.id"
        ).columns(
            sa.column("id"),
            sa.column("submission_id"),
            sa.column("device"),
            sa.column("leaderboard_id"),
            sa.column("problem"),
            sa.column("user_id"),
            sa.column("created_at", UTCDateTime()),
            sa.column("passed"),
            sa.column("score"),
            sa.column("result", JSONType),
        ),
        {"no": False},
    )
    while chunk := rows.fetchmany(BATCH):
        values = []
        for run_id, sid, device, lb_id, problem, user_id, created_at, passed, score, result in chunk:
            speedup, roofline = run_figures(result or {})
            values.append(
                {
                    "run_id": run_id, "submission_id": sid, "device": device, "leaderboard_id": lb_id,
                    "problem": problem, "user_id": user_id, "submitted_at": created_at, "passed": bool(passed),
                    "score": score, "speedup": speedup, "roofline_share": roofline,
                }
            )  # fmt: skip
        conn.execute(entries.insert(), values)


def downgrade() -> None:
    for name in reversed(INDEXES):
        op.drop_index(name, table_name="archive_entries")
    op.drop_index(op.f("ix_archive_entries_user_id"), table_name="archive_entries")
    op.drop_index(op.f("ix_archive_entries_submission_id"), table_name="archive_entries")
    op.drop_table("archive_entries")
