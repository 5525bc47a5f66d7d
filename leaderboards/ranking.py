"""Rankings from stored runs: which submissions are eligible, each user's best, ranks and rank changes.

The ranking of a leaderboard and device is the ``best_scores`` table (one row per user), kept current in the
same transaction that records the run completing an eligible ranked job. ``eligible_bests`` computes the same
thing from ``runs`` alone; it rebuilds a user's or a whole leaderboard's rows (after a deleted submission or a
forced problem change) and the tests check that the two always agree.

A submission is eligible on a device when it is a ranked, not deleted submission whose job has a passed public
run and a passed secret-seed run, both with a score and recorded under the leaderboard's current fingerprint; its
score is the worse (higher) of the two (:func:`ranked_score`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, case, delete, func, insert, or_, select
from sqlalchemy.orm import Session, aliased

from leaderboards.models import BestScore, Job, Leaderboard, RankChange, Run, Submission, User
from runners.contract import Mode


@dataclass(frozen=True)
class Eligible:
    user_id: int
    device: str
    submission_id: int
    score: float
    submitted_at: datetime


def ranked_score(public: float, secret: float) -> float:
    """A ranked submission's score: the worse of its public and its secret-seed run. The public run's inputs come
    from seeds anyone can read in the problem, the secret run's from a secret; ranking the worse one means
    precomputing public answers can only hurt."""
    return max(public, secret)


def _eligible(leaderboard: Leaderboard, device: str | None, user_id: int | None) -> tuple[list, list]:
    """The score expression, joins and conditions that make a submission eligible on a device (see the module
    docstring). The score is :func:`ranked_score` of the two runs, in SQL."""
    pub, sec = aliased(Run), aliased(Run)
    conditions = [
        Submission.leaderboard_id == leaderboard.id,
        Submission.mode == Mode.RANKED.value,
        Submission.deleted.is_(False),
    ]
    if device is not None:
        conditions.append(Job.device == device)
    if user_id is not None:
        conditions.append(Submission.user_id == user_id)
    joins = [
        (Job, Job.submission_id == Submission.id),
        (
            pub,
            and_(
                pub.job_id == Job.id,
                pub.secret.is_(False),
                pub.passed.is_(True),
                pub.score.is_not(None),
                pub.fingerprint == leaderboard.fingerprint,
            ),
        ),
        (
            sec,
            and_(
                sec.job_id == Job.id,
                sec.secret.is_(True),
                sec.passed.is_(True),
                sec.score.is_not(None),
                sec.fingerprint == leaderboard.fingerprint,
            ),
        ),
    ]
    score = case((pub.score >= sec.score, pub.score), else_=sec.score).label("score")
    return [score, *joins], conditions


def eligible_bests(
    session: Session, leaderboard: Leaderboard, *, device: str | None = None, user_id: int | None = None
) -> list[Eligible]:
    """Each user's best eligible submission per device, computed from ``runs`` (ties: earlier submission)."""
    (score, *joins), conditions = _eligible(leaderboard, device, user_id)
    ranked = select(
        Submission.user_id,
        Job.device,
        Submission.id.label("submission_id"),
        score,
        Submission.created_at,
        func.row_number()
        .over(
            partition_by=(Submission.user_id, Job.device),
            order_by=(score, Submission.created_at, Submission.id),
        )
        .label("rn"),
    )
    for target, on in joins:
        ranked = ranked.join(target, on)
    best = ranked.where(*conditions).subquery()
    rows = session.execute(
        select(best.c.user_id, best.c.device, best.c.submission_id, best.c.score, best.c.created_at)
        .where(best.c.rn == 1)
        .order_by(best.c.device, best.c.score, best.c.created_at, best.c.submission_id)
    ).all()
    return [Eligible(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def eligible_history(session: Session, leaderboard: Leaderboard, device: str) -> list[tuple[datetime, float]]:
    """(submitted at, score) of every eligible submission on a device by a user who is not banned, oldest first:
    what a "best score over time" chart draws."""
    (score, *joins), conditions = _eligible(leaderboard, device, None)
    stmt = select(Submission.created_at, score)
    for target, on in joins:
        stmt = stmt.join(target, on)
    stmt = stmt.join(User, User.id == Submission.user_id).where(*conditions, User.is_banned.is_(False))
    return [(when, float(score)) for when, score in session.execute(stmt.order_by(Submission.created_at)).all()]


def rebuild(session: Session, leaderboard: Leaderboard, *, user_id: int | None = None) -> None:
    """Replace the ``best_scores`` rows of a leaderboard (or of one user on it) with what ``runs`` say."""
    stmt = delete(BestScore).where(BestScore.leaderboard_id == leaderboard.id)
    if user_id is not None:
        stmt = stmt.where(BestScore.user_id == user_id)
    session.execute(stmt)
    rows = [
        {
            "leaderboard_id": leaderboard.id,
            "device": e.device,
            "user_id": e.user_id,
            "submission_id": e.submission_id,
            "score": e.score,
            "submitted_at": e.submitted_at,
        }
        for e in eligible_bests(session, leaderboard, user_id=user_id)
    ]
    if rows:
        session.execute(insert(BestScore), rows)  # one multi-row INSERT, not one ORM object per user


def _better_than(score: float, submitted_at: datetime, submission_id: int):
    return or_(
        BestScore.score < score,
        and_(BestScore.score == score, BestScore.submitted_at < submitted_at),
        and_(BestScore.score == score, BestScore.submitted_at == submitted_at, BestScore.submission_id < submission_id),
    )


def rank_of(session: Session, best: BestScore) -> int:
    """1 + the number of other, not banned users ahead of this row on its leaderboard and device."""
    ahead = session.scalar(
        select(func.count())
        .select_from(BestScore)
        .join(User, User.id == BestScore.user_id)
        .where(
            BestScore.leaderboard_id == best.leaderboard_id,
            BestScore.device == best.device,
            BestScore.user_id != best.user_id,
            User.is_banned.is_(False),
            _better_than(best.score, best.submitted_at, best.submission_id),
        )
    )
    return int(ahead or 0) + 1


@dataclass(frozen=True)
class BestUpdate:
    personal_best: bool
    rank: int | None
    change: RankChange | None


def offer(
    session: Session,
    leaderboard: Leaderboard,
    submission: Submission,
    device: str,
    score: float,
    *,
    announce_top: int,
) -> BestUpdate:
    """A newly eligible submission: make it the user's best if it beats theirs, and record a top-rank change.

    The leaderboard row is locked (PostgreSQL) so that two workers finishing at once compute ranks in turn.
    """
    session.execute(select(Leaderboard.id).where(Leaderboard.id == leaderboard.id).with_for_update())
    best = session.scalar(
        select(BestScore).where(
            BestScore.leaderboard_id == leaderboard.id,
            BestScore.device == device,
            BestScore.user_id == submission.user_id,
        )
    )
    new_key = (score, submission.created_at, submission.id)
    if best is not None and (best.score, best.submitted_at, best.submission_id) <= new_key:
        return BestUpdate(personal_best=best.submission_id == submission.id, rank=rank_of(session, best), change=None)
    user = session.get(User, submission.user_id)
    old_rank = rank_of(session, best) if best is not None and user is not None and not user.is_banned else None
    previous = best.score if best is not None else None
    if best is None:
        best = BestScore(leaderboard_id=leaderboard.id, device=device, user_id=submission.user_id)
        session.add(best)
    best.submission_id, best.score, best.submitted_at = submission.id, score, submission.created_at
    session.flush()
    if user is None or user.is_banned:
        return BestUpdate(personal_best=True, rank=None, change=None)
    new_rank = rank_of(session, best)
    change = None
    if new_rank <= announce_top and (old_rank is None or new_rank < old_rank):
        change = RankChange(
            leaderboard_id=leaderboard.id,
            device=device,
            user_id=submission.user_id,
            submission_id=submission.id,
            old_rank=old_rank,
            new_rank=new_rank,
            score=score,
            previous_score=previous,
        )
        session.add(change)
        session.flush()
    return BestUpdate(personal_best=True, rank=new_rank, change=change)
