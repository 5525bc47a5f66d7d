"""After the deadline (issue 29): submissions still run, as unranked practice.

A submission made once its leaderboard's deadline has passed is stored and run like any other (every mode, ranked
too: both runs, so its author sees the score it would have had), with a ``late_submissions`` row that keeps it out of
every ranking and standings (``ranking.practice_only``). Its author sees it in their own submissions, marked; everyone
sees it in the leaderboard's "after the deadline" list (``late_submissions``: status, verdict, score; never the code).
Practice has its own hourly limit per user and leaderboard (``KERNELCUP_LATE_SUBMISSIONS_PER_HOUR``; 0 closes a
leaderboard at its deadline, as before).

An admin may let one late ranked entry in as ranked (``admit_late``: "late, admitted by X because Y", audited): it
then ranks like an entry made in time, and where a device's final standings were frozen already they are thawed
(the audit says so) so that the deadline's housekeeping freezes them again with it, after its system test where the
problem has held-out cases.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from leaderboards import ranking
from leaderboards.errors import InvalidChange, LeaderboardClosed, RateLimited, SubmissionNotFound
from leaderboards.models import (
    Job,
    JobStatus,
    LateSubmission,
    Leaderboard,
    Run,
    Submission,
    User,
)
from leaderboards.moderation_states import ranks_condition
from leaderboards.results import SubmissionMode, UserRef
from leaderboards.service_base import ServiceBase, hour_full_until
from leaderboards.thaw import thaw_missing

LATE_LIST_MAX = 200
"""Most rows of one page of the "after the deadline" list."""
MAX_REASON = 500
PRACTICE = "after the deadline: unranked practice"


def admitted_note(by: str, reason: str) -> str:
    """What every surface shows with an admitted late entry."""
    return f"late, admitted by {by} because {reason}"


@dataclass(frozen=True)
class LateJob:
    device: str
    status: str
    verdict: str | None
    score_ns: float | None
    """The public run's score (timed modes)."""
    ranked_score_ns: float | None
    """A ranked job whose two runs passed: the score it would rank by."""


@dataclass(frozen=True)
class LateEntry:
    """A submission made after its leaderboard's deadline, as anyone may see it: never the code or a message."""

    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    mode: SubmissionMode
    created_at: datetime
    jobs: tuple[LateJob, ...]
    admitted_by: str | None = None
    admitted_reason: str | None = None
    admitted_at: datetime | None = None

    @property
    def note(self) -> str:
        if self.admitted_by is None:
            return PRACTICE
        return admitted_note(self.admitted_by, self.admitted_reason or "")


@dataclass(frozen=True)
class LatePage:
    leaderboard: str
    deadline: datetime
    entries: tuple[LateEntry, ...]
    total: int
    offset: int


def late_notes(s: Session, submission_ids: Iterable[int]) -> dict[int, str]:
    """Submission id -> its late note, for those of ``submission_ids`` made after their deadline."""
    ids = list(submission_ids)
    if not ids:
        return {}
    rows = s.scalars(select(LateSubmission).where(LateSubmission.submission_id.in_(ids))).all()
    return {r.submission_id: admitted_note(r.admitted_by, r.admitted_reason or "") if r.admitted_by else PRACTICE
            for r in rows}  # fmt: skip


class LateMixin(ServiceBase):
    """Practice after the deadline: its rate limit, its list, and an admin's admission of one entry."""

    def _check_practice(self, s: Session, u: User, lb: Leaderboard, now: datetime, cost: int = 1) -> None:
        """``cost`` submissions after ``lb``'s deadline (a batch's candidates): refused when practice is off, else
        within the practice limit (every submission after the deadline counts one, whatever its mode)."""
        limit = self.settings.late_submissions_per_hour
        if not limit:
            raise LeaderboardClosed(lb.name, lb.deadline)
        if cost > limit:
            raise RateLimited(
                f"{lb.name!r} closed on {lb.deadline:%Y-%m-%d %H:%M} UTC; after it you can send {limit} practice "
                f"submissions per hour, fewer than the {cost} sent at once: send at most {limit} at a time.",
                now + timedelta(hours=1),
            )
        mine = (
            select(Submission.created_at)
            .join(LateSubmission, LateSubmission.submission_id == Submission.id)
            .where(Submission.leaderboard_id == lb.id, Submission.user_id == u.id)
        )
        retry_at = hour_full_until(s, mine, Submission.created_at, limit - cost + 1, now)
        if retry_at is None:
            return
        raise RateLimited(
            f"{lb.name!r} closed on {lb.deadline:%Y-%m-%d %H:%M} UTC; after it you can send {limit} practice "
            f"submissions per hour (unranked); try again after {retry_at:%H:%M:%S} UTC.",
            retry_at,
        )

    @staticmethod
    def _mark_late(s: Session, sub: Submission) -> None:
        s.add(LateSubmission(submission_id=sub.id, leaderboard_id=sub.leaderboard_id, created_at=sub.created_at))

    def late_submissions(
        self, leaderboard: str, *, viewer: UserRef | None = None, limit: int = 50, offset: int = 0
    ) -> LatePage:
        """The leaderboard's "after the deadline" list, newest first: each practice submission (and admitted entry)
        with its jobs' status, verdict and score. Deleted submissions, quarantined or hacked ones and banned users are
        left out."""
        if not 1 <= limit <= LATE_LIST_MAX:
            raise InvalidChange(f"limit is 1 to {LATE_LIST_MAX}; page with offset.", field="limit")
        if offset < 0:
            raise InvalidChange("offset is 0 or more.", field="offset")
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False, viewer=viewer)
            shown = (
                select(Submission, LateSubmission, User.name)
                .join(LateSubmission, LateSubmission.submission_id == Submission.id)
                .join(User, User.id == Submission.user_id)
                .where(
                    LateSubmission.leaderboard_id == lb.id,
                    Submission.deleted.is_(False),
                    User.is_banned.is_(False),
                    ranks_condition(),
                )
            )
            total = s.scalar(select(func.count()).select_from(shown.with_only_columns(Submission.id).subquery()))
            rows = s.execute(shown.order_by(Submission.id.desc()).offset(offset or None).limit(limit)).all()
            jobs = _late_jobs(s, [sub.id for sub, _, _ in rows])
            entries = tuple(
                LateEntry(
                    submission_id=sub.id,
                    leaderboard=lb.name,
                    user_name=name,
                    file_name=sub.file_name,
                    mode=SubmissionMode(sub.mode),
                    created_at=sub.created_at,
                    jobs=jobs.get(sub.id, ()),
                    admitted_by=late.admitted_by,
                    admitted_reason=late.admitted_reason,
                    admitted_at=late.admitted_at,
                )
                for sub, late, name in rows
            )
            return LatePage(lb.name, lb.deadline, entries, int(total or 0), offset)

    def admit_late(self, submission_id: int, *, actor: str, reason: str) -> LateEntry:
        """Let one late ranked submission in as ranked ("late, admitted by ``actor`` because ``reason``"): it enters
        the ranking like an entry made in time. Devices whose final standings were frozen are thawed, and where the
        problem has held-out cases the entry's system test is queued, so the deadline's housekeeping freezes them
        again with it. Audited."""
        reason = " ".join(reason.split())
        if not reason or len(reason) > MAX_REASON:
            raise InvalidChange(
                f"Say why the entry is let in (1 to {MAX_REASON} characters): it is shown with the entry.",
                field="reason",
            )
        now = self.clock()
        with self.db.transaction() as s:
            sub = s.get(Submission, submission_id)
            if sub is None or sub.deleted:
                raise SubmissionNotFound(submission_id)
            lb = self._leaderboard(s, sub.leaderboard.name, lock=True)
            late = s.get(LateSubmission, submission_id, with_for_update=True)
            if late is None:
                raise InvalidChange(
                    f"Submission #{submission_id} was made before {lb.name!r}'s deadline: it ranks (or not) like any "
                    "other; there is nothing to admit."
                )
            if late.admitted_by is not None:
                raise InvalidChange(
                    f"Submission #{submission_id} was admitted already, by {late.admitted_by} on "
                    f"{late.admitted_at:%Y-%m-%d %H:%M} UTC."
                )
            if sub.mode != SubmissionMode.RANKED.value:
                raise InvalidChange(
                    f"Submission #{submission_id} is a {sub.mode} run: only a ranked one can be admitted (it has the "
                    "secret-seed run a ranking needs). Its author can send the file again in mode ranked; admit that."
                )
            jobs = s.scalars(select(Job).where(Job.submission_id == sub.id)).all()
            if any(not JobStatus(j.status).finished for j in jobs):
                raise InvalidChange(f"Submission #{submission_id} is still running; admit it once it has finished.")
            late.admitted_by, late.admitted_reason, late.admitted_at = actor, reason, now
            s.flush()
            ranking.rebuild(s, lb, user_id=sub.user_id)
            thawed = sorted(d for _, d in thaw_missing(s, sub.user_id, [lb.id], actor=actor, why=f"#{sub.id} admitted"))
            self._audit(
                s, actor, "admit_late", lb.name, submission_id=sub.id, user=sub.user.name, reason=reason,
                thawed=thawed,
            )  # fmt: skip
            return LateEntry(
                sub.id, lb.name, sub.user.name, sub.file_name, SubmissionMode(sub.mode), sub.created_at,
                _late_jobs(s, [sub.id]).get(sub.id, ()), actor, reason, now,
            )  # fmt: skip


def _late_jobs(s: Session, submission_ids: list[int]) -> dict[int, tuple[LateJob, ...]]:
    """Each submission's jobs as the late list shows them: status, verdict, the public score, the ranked score."""
    if not submission_ids:
        return {}
    jobs = s.scalars(select(Job).where(Job.submission_id.in_(submission_ids)).order_by(Job.id)).all()
    runs = {
        (r.job_id, r.secret): r
        for r in s.scalars(select(Run).where(Run.submission_id.in_(submission_ids)))
    }
    out: dict[int, list[LateJob]] = {}
    for j in jobs:
        public, secret = runs.get((j.id, False)), runs.get((j.id, True))
        both = public is not None and secret is not None and public.passed and secret.passed
        ranked = None
        if both and public is not None and secret is not None and public.score is not None and secret.score is not None:
            ranked = j.ranked_score if j.ranked_score is not None else ranking.ranked_score(public.score, secret.score)
        out.setdefault(j.submission_id, []).append(
            LateJob(j.device, j.status, j.verdict, public.score if public is not None else None, ranked)
        )
    return {k: tuple(v) for k, v in out.items()}
