"""The near-clone index (issue 34, ``leaderboards/similarity_index.py``).

- ``similarity_signatures``: each submission's code fingerprint (its sorted 8-byte shingle hashes).
- ``similarity_bands``: its MinHash in bands, one row per band, looked up by (problem, band, bucket).
- ``submissions (created_at, id)``: the archive's newest-first pages walk it and stop at the page's end.

Every stored submission (compares aside) is indexed here, in batches: the fingerprints are those of
``leaderboards.similarity`` today, so the backfill imports it.

Revision ID: 0018
Revises: 0017
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
BATCH = 500


def upgrade() -> None:
    signatures = op.create_table(
        "similarity_signatures",
        sa.Column("submission_id", Id, autoincrement=False, nullable=False),
        sa.Column("problem", sa.String(length=200), nullable=False, comment="its leaderboard's problem"),
        sa.Column("shingles", sa.LargeBinary(), nullable=False, comment="the fingerprint's 8-byte hashes, sorted"),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_similarity_signatures_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_similarity_signatures")),
    )
    op.create_index(op.f("ix_similarity_signatures_problem"), "similarity_signatures", ["problem"], unique=False)
    bands = op.create_table(
        "similarity_bands",
        sa.Column("submission_id", Id, autoincrement=False, nullable=False),
        sa.Column("band", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("problem", sa.String(length=200), nullable=False),
        sa.Column(
            "bucket", sa.BigInteger(), nullable=False, comment="a signed 64-bit hash of the band's MinHash values"
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_similarity_bands_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("submission_id", "band", name=op.f("pk_similarity_bands")),
    )
    op.create_index(
        "ix_similarity_bands_lookup", "similarity_bands", ["problem", "band", "bucket", "submission_id"], unique=False
    )
    op.create_index(op.f("ix_submissions_created_at_id"), "submissions", ["created_at", "id"], unique=False)
    _backfill(signatures, bands)


def _backfill(signatures: sa.Table, bands: sa.Table) -> None:
    from leaderboards.similarity import fingerprint
    from leaderboards.similarity_index import buckets, pack

    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT s.id, s.file_name, l.problem, c.content FROM submissions s "
            "JOIN leaderboards l ON l.id = s.leaderboard_id JOIN submission_code c ON c.id = s.code_id "
            "WHERE s.mode <> 'compare' ORDER BY s.id"
        )
    )
    while chunk := rows.fetchmany(BATCH):
        sigs, bs = [], []
        for sid, file_name, problem, content in chunk:
            print_ = fingerprint(bytes(content).decode("utf-8", errors="replace"), file_name)
            sigs.append({"submission_id": sid, "problem": problem, "shingles": pack(print_)})
            bs += [
                {"submission_id": sid, "band": b, "problem": problem, "bucket": bucket}
                for b, bucket in enumerate(buckets(print_))
            ]
        conn.execute(signatures.insert(), sigs)
        if bs:
            conn.execute(bands.insert(), bs)


def downgrade() -> None:
    op.drop_index(op.f("ix_submissions_created_at_id"), table_name="submissions")
    op.drop_index("ix_similarity_bands_lookup", table_name="similarity_bands")
    op.drop_table("similarity_bands")
    op.drop_index(op.f("ix_similarity_signatures_problem"), table_name="similarity_signatures")
    op.drop_table("similarity_signatures")
