"""Rankings from stored runs: which submissions are eligible, each user's best, ranks and rank changes.

The ranking of a leaderboard and device is the ``best_scores`` table (one row per user), kept current in the
same transaction that records the run completing an eligible ranked job. ``eligible_bests`` computes the same
thing from ``runs`` alone; it rebuilds a user's or a whole leaderboard's rows (after a deleted submission or a
forced problem change) and the tests check that the two always agree.

The score history is the ``score_improvements`` table: each user's best over time is a step function that only
changes when they improve, so only those steps are stored (kept with ``best_scores`` by :func:`offer`, rebuilt with
it by :func:`rebuild`) and read back a bounded page at a time, each series cut to a bounded number of points
(:func:`history_series`, :func:`best_over_time`).

A submission is eligible on a device when it is a ranked, not deleted submission, not quarantined or hacked
(``leaderboards/moderation.py``), not practice after the deadline (``leaderboards/late.py``), whose job has a passed
public run and a passed secret-seed run, both with a score and recorded under the leaderboard's current fingerprint;
its score is the job's ``ranked_score``, both runs pooled (``leaderboards.pooling``), or for a job recorded before
pooling the worse (higher) of the two (:func:`ranked_score`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, Integer, Select, and_, case, delete, func, insert, literal, or_, select
from sqlalchemy.orm import Session, aliased

from leaderboards.models import (
    BestScore,
    Job,
    LateSubmission,
    Leaderboard,
    RankChange,
    Run,
    ScoreImprovement,
    Submission,
    SubmissionOrigin,
    User,
)
from leaderboards.moderation_states import ranks_condition
from runners.contract import Mode


@dataclass(frozen=True)
class Eligible:
    user_id: int
    device: str
    submission_id: int
    score: float
    submitted_at: datetime


def ranked_score(public: float, secret: float) -> float:
    """The ranked score of a job recorded before pooling (``Job.ranked_score`` is NULL): the worse of its public and
    its secret-seed run. A job recorded since ranks by ``Job.ranked_score``, both runs pooled case by case where they
    agree and the secret run's time where it is clearly slower (``leaderboards.pooling``), so precomputing public
    answers still can only hurt."""
    return max(public, secret)


def practice_condition() -> ColumnElement[bool]:
    """SQL: the submission was made after its deadline and no admin admitted it (``leaderboards/late.py``), or it is
    a replay (``leaderboards/replay.py``): neither ranks."""
    late = (
        select(LateSubmission.submission_id)
        .where(LateSubmission.submission_id == Submission.id, LateSubmission.admitted_by.is_(None))
        .exists()
    )
    replay = (
        select(SubmissionOrigin.submission_id)
        .where(SubmissionOrigin.submission_id == Submission.id, SubmissionOrigin.replay_of.is_not(None))
        .exists()
    )
    return or_(late, replay)


def practice_only(session: Session, submission_id: int) -> bool:
    """Whether a submission is practice after the deadline (it runs, but ranks nowhere until an admin admits it), or
    a replay (``leaderboards/replay.py``), which never ranks."""
    found = session.scalar(
        select(LateSubmission.submission_id).where(
            LateSubmission.submission_id == submission_id, LateSubmission.admitted_by.is_(None)
        )
    )
    replay = session.scalar(select(SubmissionOrigin.replay_of).where(SubmissionOrigin.submission_id == submission_id))
    return found is not None or replay is not None


def _eligible(leaderboard: Leaderboard, device: str | None, user_id: int | None) -> tuple[list, list]:
    """The score expression, joins and conditions that make a submission eligible on a device (see the module
    docstring). The score is :func:`ranked_score` of the two runs, in SQL."""
    pub, sec = aliased(Run), aliased(Run)
    conditions = [
        Submission.leaderboard_id == leaderboard.id,
        Submission.mode == Mode.RANKED.value,
        Submission.deleted.is_(False),
        ranks_condition(),  # quarantined and hacked entries rank nowhere (leaderboards/moderation.py)
        ~practice_condition(),  # made after the deadline and not admitted: practice (leaderboards/late.py)
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
    slower = case((pub.score >= sec.score, pub.score), else_=sec.score)
    score = func.coalesce(Job.ranked_score, slower).label("score")
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


@dataclass(frozen=True)
class Step:
    """One point of a best-over-time step function: from ``submitted_at`` on, the best is ``score``."""

    submitted_at: datetime
    score: float
    submission_id: int


def improvements_query(leaderboard: Leaderboard, *, user_id: int | None = None) -> Select:
    """The ``score_improvements`` rows of a leaderboard (or of one user on it), computed from ``runs``: each eligible
    submission whose score is below every earlier one (by submission time, then id) of its user on its device."""
    (score, *joins), conditions = _eligible(leaderboard, None, user_id)
    order = (Submission.created_at, Submission.id)
    earlier = func.min(score).over(partition_by=(Submission.user_id, Job.device), order_by=order, rows=(None, -1))
    stmt = select(
        Submission.user_id, Job.device, Submission.id.label("submission_id"), score,
        Submission.created_at.label("submitted_at"), earlier.label("earlier"),
    )  # fmt: skip
    for target, on in joins:
        stmt = stmt.join(target, on)
    rows = stmt.where(*conditions).subquery()
    return select(rows.c.user_id, rows.c.device, rows.c.submission_id, rows.c.score, rows.c.submitted_at).where(
        or_(rows.c.earlier.is_(None), rows.c.score < rows.c.earlier)
    )


def note_improvement(
    session: Session, leaderboard: Leaderboard, submission: Submission, device: str, score: float
) -> bool:
    """Keep the user's steps current for a newly eligible submission: it is a step when it beats every earlier
    step of theirs (the earlier steps hold the best so far), and then later steps it is not beaten by stop being
    steps. Submissions may become eligible out of submission order (two workers, a retry), hence the second part.
    Whether it is a step."""
    here = (
        ScoreImprovement.leaderboard_id == leaderboard.id,
        ScoreImprovement.device == device,
        ScoreImprovement.user_id == submission.user_id,
    )
    if session.scalar(select(ScoreImprovement.id).where(*here, ScoreImprovement.submission_id == submission.id)):
        return True  # offered again (a re-recorded run): already a step
    when, sid = submission.created_at, submission.id
    before = or_(
        ScoreImprovement.submitted_at < when,
        and_(ScoreImprovement.submitted_at == when, ScoreImprovement.submission_id < sid),
    )
    best_before = session.scalar(select(func.min(ScoreImprovement.score)).where(*here, before))
    if best_before is not None and score >= best_before:
        return False
    session.execute(
        delete(ScoreImprovement).where(
            *here,
            ~before,
            ScoreImprovement.score >= score,
        )
    )
    session.add(
        ScoreImprovement(
            leaderboard_id=leaderboard.id,
            device=device,
            user_id=submission.user_id,
            submission_id=sid,
            score=score,
            submitted_at=when,
        )
    )
    return True


def shown_users(programs: bool):  # type: ignore[no-untyped-def]
    """Whose steps a history shows: never a banned user's; a program's only with ``programs``."""
    return User.is_banned.is_(False) if programs else and_(User.is_banned.is_(False), User.is_program.is_(False))


def _thinned(rows, partition: tuple, max_points: int) -> Select:
    """At most ``max_points`` rows per partition of ``rows`` (a subquery with ``submitted_at``, ``submission_id``,
    ``score``), in time order: the first, and the last of each of ``max_points - 1`` equal runs of them (``ntile``).
    Every kept row is a true step, the last one the current best; a partition of at most ``max_points`` rows is
    kept whole; ``n`` is the partition's size before thinning. Done in SQL: a user who improved 100,000 times
    costs the database a scan of their steps, not a transfer of them."""
    order = (rows.c.submitted_at, rows.c.submission_id)
    parts = [*partition]
    numbered = select(
        rows,
        func.row_number().over(partition_by=parts or None, order_by=order).label("rn"),
        func.ntile(max(1, max_points - 1)).over(partition_by=parts or None, order_by=order).label("bucket"),
        func.count().over(partition_by=parts or None).label("n"),
    ).subquery()
    last = func.row_number().over(
        partition_by=[*(numbered.c[c.name] for c in partition), numbered.c.bucket],
        order_by=(numbered.c.submitted_at.desc(), numbered.c.submission_id.desc()),
    )
    ranked = select(numbered, last.label("from_last")).subquery()
    return select(ranked).where(or_(ranked.c.rn == 1, ranked.c.from_last == 1))


def best_over_time(
    session: Session, leaderboard: Leaderboard, device: str, *, max_points: int, programs: bool = True
) -> tuple[list[Step], int]:
    """The leaderboard's best score over time on a device (the record: a step wherever some shown user's step beat
    everyone's before it), oldest first, at most ``max_points`` steps (see :func:`_thinned`), and how many there are
    in all. Reads the users' steps, not the runs: a few per user."""
    order = (ScoreImprovement.submitted_at, ScoreImprovement.submission_id)
    earlier = func.min(ScoreImprovement.score).over(order_by=order, rows=(None, -1))
    steps = (
        select(
            ScoreImprovement.submitted_at,
            ScoreImprovement.submission_id,
            ScoreImprovement.score,
            earlier.label("earlier"),
        )
        .where(
            ScoreImprovement.leaderboard_id == leaderboard.id,
            ScoreImprovement.device == device,
            # Hidden users are few (banned ones have a partial index): one hashed set, not a join per step.
            ScoreImprovement.user_id.not_in(select(User.id).where(~shown_users(programs))),
        )
        .subquery()
    )
    records = (
        select(steps.c.submitted_at, steps.c.submission_id, steps.c.score)
        .where(or_(steps.c.earlier.is_(None), steps.c.score < steps.c.earlier))
        .subquery()
    )
    kept = _thinned(records, (), max_points).subquery()
    rows = session.execute(
        select(kept.c.submitted_at, kept.c.score, kept.c.submission_id, kept.c.n).order_by(
            kept.c.submitted_at, kept.c.submission_id
        )
    ).all()
    return [Step(when, float(score), sid) for when, score, sid, _ in rows], int(rows[0][3]) if rows else 0


def history_series(
    session: Session, leaderboard: Leaderboard, device: str, user_ids: list[int], *, max_points: int
) -> dict[int, tuple[list[Step], int]]:
    """The steps of each of these users on a device, oldest first, at most ``max_points`` each, and how many each
    has in all."""
    if not user_ids:
        return {}
    rows = (
        select(
            ScoreImprovement.user_id,
            ScoreImprovement.submitted_at,
            ScoreImprovement.submission_id,
            ScoreImprovement.score,
        )
        .where(
            ScoreImprovement.leaderboard_id == leaderboard.id,
            ScoreImprovement.device == device,
            ScoreImprovement.user_id.in_(user_ids),
        )
        .subquery()
    )
    kept = _thinned(rows, (rows.c.user_id,), max_points).subquery()
    out: dict[int, tuple[list[Step], int]] = {uid: ([], 0) for uid in user_ids}
    for uid, when, score, sid, n in session.execute(
        select(kept.c.user_id, kept.c.submitted_at, kept.c.score, kept.c.submission_id, kept.c.n).order_by(
            kept.c.user_id, kept.c.submitted_at, kept.c.submission_id
        )
    ):
        out[uid][0].append(Step(when, float(score), sid))
        out[uid] = (out[uid][0], int(n))
    return out


def rebuild(session: Session, leaderboard: Leaderboard, *, user_id: int | None = None) -> None:
    """Replace the ``best_scores`` and ``score_improvements`` rows of a leaderboard (or of one user on it) with what
    ``runs`` say."""
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
    steps = delete(ScoreImprovement).where(ScoreImprovement.leaderboard_id == leaderboard.id)
    if user_id is not None:
        steps = steps.where(ScoreImprovement.user_id == user_id)
    session.execute(steps)
    found = improvements_query(leaderboard, user_id=user_id).subquery()
    session.execute(
        insert(ScoreImprovement).from_select(
            ["leaderboard_id", "device", "user_id", "submission_id", "score", "submitted_at"],
            select(
                literal(leaderboard.id, Integer), found.c.device, found.c.user_id, found.c.submission_id,
                found.c.score, found.c.submitted_at,
            ),
        )
    )  # fmt: skip


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


def lock_leaderboard(session: Session, leaderboard: Leaderboard) -> None:
    """Lock the leaderboard's row until the transaction ends (PostgreSQL; SQLite has one writer anyway), so that
    rank changes on it happen in turn."""
    session.execute(select(Leaderboard.id).where(Leaderboard.id == leaderboard.id).with_for_update())


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
    lock_leaderboard(session, leaderboard)
    note_improvement(session, leaderboard, submission, device, score)
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
