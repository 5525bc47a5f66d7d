"""Score history as steps: each user's improvements per leaderboard and device (issue 37), filled from the runs.

A user's best over time only changes when they improve, so the history reads these rows (a few per user) instead
of every eligible run (a million runs made one history answer 29.7 MB and 7-26 s).

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# The steps of every stored ranking, as ``leaderboards.ranking.improvements_query`` computes them (eligible: a ranked,
# not deleted submission whose job has a passed public and a passed secret-seed run with a score, both under the
# leaderboard's current fingerprint; its score the worse of the two), written here in SQL so that the migration
# does not change when the code does.
BACKFILL = """
INSERT INTO score_improvements (leaderboard_id, device, user_id, submission_id, score, submitted_at)
SELECT leaderboard_id, device, user_id, submission_id, score, submitted_at FROM (
    SELECT s.leaderboard_id, j.device, s.user_id, s.id AS submission_id, s.created_at AS submitted_at,
           CASE WHEN pub.score >= sec.score THEN pub.score ELSE sec.score END AS score,
           min(CASE WHEN pub.score >= sec.score THEN pub.score ELSE sec.score END) OVER (
               PARTITION BY s.leaderboard_id, s.user_id, j.device ORDER BY s.created_at, s.id
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
           ) AS earlier
    FROM submissions s
    JOIN leaderboards lb ON lb.id = s.leaderboard_id
    JOIN jobs j ON j.submission_id = s.id
    JOIN runs pub ON pub.job_id = j.id AND NOT pub.secret AND pub.passed AND pub.score IS NOT NULL
        AND pub.fingerprint = lb.fingerprint
    JOIN runs sec ON sec.job_id = j.id AND sec.secret AND sec.passed AND sec.score IS NOT NULL
        AND sec.fingerprint = lb.fingerprint
    WHERE s.mode = 'ranked' AND NOT s.deleted
) eligible
WHERE earlier IS NULL OR score < earlier
"""


def upgrade() -> None:
    op.create_table(
        "score_improvements",
        sa.Column("id", Id, nullable=False),
        sa.Column("leaderboard_id", Id, nullable=False),
        sa.Column("device", sa.String(length=32), nullable=False),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("submission_id", Id, nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["leaderboard_id"],
            ["leaderboards.id"],
            name=op.f("fk_score_improvements_leaderboard_id_leaderboards"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_score_improvements_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_score_improvements_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_score_improvements")),
    )
    op.create_index(
        "ix_score_improvements_user",
        "score_improvements",
        ["leaderboard_id", "device", "user_id", "submitted_at", "submission_id"],
        unique=False,
    )
    op.create_index(
        "ix_score_improvements_time",
        "score_improvements",
        ["leaderboard_id", "device", "submitted_at", "submission_id", "score", "user_id"],
        unique=False,
    )
    op.create_index(op.f("ix_score_improvements_submission_id"), "score_improvements", ["submission_id"], unique=False)
    op.execute(BACKFILL)


def downgrade() -> None:
    op.drop_index(op.f("ix_score_improvements_submission_id"), table_name="score_improvements")
    op.drop_index("ix_score_improvements_time", table_name="score_improvements")
    op.drop_index("ix_score_improvements_user", table_name="score_improvements")
    op.drop_table("score_improvements")
