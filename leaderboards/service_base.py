"""The plumbing every part of the service shares: transactions, lookups, and the views built from rows.

``LeaderboardService`` (``service.py``) is assembled from ``ServiceBase`` and the mixins in ``admin.py`` and
``recording.py``; surfaces only ever see that one class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute, Session

from leaderboards import ranking
from leaderboards.db import Database
from leaderboards.errors import (
    DeviceNotAllowed,
    InvalidSubmission,
    LeaderboardNotFound,
    SubmissionNotFound,
    UserNotFound,
)
from leaderboards.events import queue_positions
from leaderboards.models import (
    AuditLog,
    BestScore,
    BoardMember,
    Job,
    JobEvent,
    JobStatus,
    Leaderboard,
    Run,
    Submission,
    SubmissionComparison,
    User,
    Worker,
    utcnow,
)
from leaderboards.moderation_states import author_text
from leaderboards.queue import WORKER_ALIVE_S, serves
from leaderboards.results import (
    ComparisonView,
    JobEventView,
    JobView,
    LeaderboardSummary,
    SubmissionMode,
    SubmissionStatus,
    UserRef,
)
from leaderboards.settings import CoreSettings
from runners.contract import LANGUAGES, Comparison, Language, Verdict

EVENTS_PER_JOB = 20
"""Latest progress events returned with each job's status."""


def hour_full_until(
    s: Session, times: Select[datetime], at: InstrumentedAttribute[datetime], limit: int, now: datetime
) -> datetime | None:
    """Whether the hour up to ``now`` holds ``limit`` of the events ``times`` selects (``at``: their time): then when
    the oldest of the newest ``limit`` leaves it (a new one may come), else None."""
    recent = s.scalars(times.where(at > now - timedelta(hours=1)).order_by(at.desc()).limit(limit)).all()
    return recent[-1] + timedelta(hours=1) if len(recent) >= limit else None


class ServiceBase:
    """Build ``LeaderboardService`` with an open ``Database`` (``leaderboards.db.open_database``) and the settings."""

    def __init__(self, db: Database, settings: CoreSettings, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.db = db
        self.settings = settings
        self.clock = clock

    # -- plumbing --------------------------------------------------------------------------------------------

    @contextmanager
    def _tx(self, session: Session | None = None) -> Iterator[Session]:
        """The caller's session (they commit), or a new transaction committed on success."""
        if session is not None:
            yield session
            return
        with self.db.transaction() as s:
            yield s

    def _leaderboard(
        self,
        s: Session,
        name: str,
        *,
        lock: bool = False,
        include_hidden: bool = True,
        viewer: UserRef | None = None,
    ) -> Leaderboard:
        """The leaderboard ``name``. Without ``include_hidden`` a hidden one is found only for a ``viewer`` who joined
        it with an invite code (``leaderboards/invites.py``); for anyone else it does not exist."""
        stmt = select(Leaderboard).where(Leaderboard.name == name)
        if lock:
            stmt = stmt.with_for_update()
        lb = s.scalar(stmt)
        if lb is None or (not include_hidden and not lb.visible and not self._member(s, lb.id, viewer)):
            known = s.scalars(select(Leaderboard.name).where(Leaderboard.visible.is_(True))).all()
            raise LeaderboardNotFound(name, list(known))
        return lb

    @staticmethod
    def _member(s: Session, leaderboard_id: int, viewer: UserRef | None) -> bool:
        """Whether ``viewer`` joined the (hidden) leaderboard with an invite code."""
        if viewer is None:
            return False
        found = s.scalar(
            select(BoardMember.id)
            .join(User, User.id == BoardMember.user_id)
            .where(BoardMember.leaderboard_id == leaderboard_id, User.identity == viewer.identity)
        )
        return found is not None

    def _user(self, s: Session, ref: UserRef, *, create: bool = True) -> User:
        user = s.scalar(select(User).where(User.identity == ref.identity))
        if user is None:
            if not create:
                raise UserNotFound(f"There is no user {ref.name!r}.")
            try:
                with s.begin_nested():
                    user = User(identity=ref.identity, discord_id=ref.discord_id, name=ref.name[:100], is_banned=False)
                    s.add(user)
            except IntegrityError:  # created by a concurrent first request of the same user
                user = s.scalar(select(User).where(User.identity == ref.identity))
                if user is None:
                    raise
        elif ref.name and user.name != ref.name[:100]:
            user.name = ref.name[:100]  # Discord names change; keep the latest for display
        return user

    def _submission(self, s: Session, submission_id: int) -> Submission:
        sub = s.get(Submission, submission_id)
        if sub is None:
            raise SubmissionNotFound(submission_id)
        return sub

    def _audit(self, s: Session, actor: str, action: str, target: str, **detail: Any) -> None:
        s.add(AuditLog(actor=actor, action=action, target=target, detail=detail))

    def _summary(self, lb: Leaderboard, submissions: int = 0) -> LeaderboardSummary:
        return LeaderboardSummary(
            name=lb.name,
            description=lb.description,
            lang=lb.lang,
            deadline=lb.deadline,
            devices=tuple(lb.devices),
            ranking_by=lb.ranking_by,
            is_open=self.clock() < lb.deadline,
            paused=lb.paused,
            visible=lb.visible,
            rate_limit_per_hour=lb.rate_limit_per_hour,
            submissions=submissions,
            created_at=lb.created_at,
            creator=lb.creator,
            problem=lb.problem,
            code_public_after_deadline=lb.code_public_after_deadline,
        )

    def _queue_position(self, s: Session, job: Job) -> int | None:
        return queue_positions(s, {job.id: (job.device, job.status)}).get(job.id)

    def _runner_online(self, s: Session) -> Callable[[str], bool]:
        """Device -> whether a live worker (``WORKER_ALIVE_S``, as ``queue_stats`` counts them) serves it."""
        since = self.clock() - timedelta(seconds=WORKER_ALIVE_S)
        alive = s.scalars(select(Worker.devices).where(Worker.heartbeat_at >= since, Worker.stopped_at.is_(None))).all()
        return lambda device: any(serves(devices, device) for devices in alive)

    def _job_view(
        self, s: Session, job: Job, *, events: bool = True, online: Callable[[str], bool] | None = None
    ) -> JobView:
        runs = {r.secret: r for r in s.scalars(select(Run).where(Run.job_id == job.id))}
        public, secret = runs.get(False), runs.get(True)
        rank = None
        best = s.scalar(
            select(BestScore).where(BestScore.submission_id == job.submission_id, BestScore.device == job.device)
        )
        if best is not None:
            user = s.get(User, best.user_id)
            rank = None if user is None or user.is_banned else ranking.rank_of(s, best)
        event_views: tuple[JobEventView, ...] = ()
        if events:
            rows = s.scalars(
                select(JobEvent).where(JobEvent.job_id == job.id).order_by(JobEvent.id.desc()).limit(EVENTS_PER_JOB)
            ).all()
            event_views = tuple(JobEventView(e.phase, e.detail, e.created_at) for e in reversed(rows))
        return JobView(
            job_id=job.id,
            device=job.device,
            status=JobStatus(job.status),
            verdict=Verdict(job.verdict) if job.verdict else None,
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            error=job.error,
            queue_position=self._queue_position(s, job),
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            score_ns=public.score if public is not None else None,
            ranked_score_ns=(
                (job.ranked_score if job.ranked_score is not None else ranking.ranked_score(public.score, secret.score))
                if public is not None and secret is not None and public.score is not None and secret.score is not None
                and public.passed and secret.passed
                else None
            ),
            public_passed=public.passed if public is not None else None,
            secret_passed=secret.passed if secret is not None else None,
            rank=rank,
            events=event_views,
            runner_online=online(job.device) if online is not None and job.status == JobStatus.QUEUED else None,
            ranked_note=job.ranked_note,
            ranked_flagged=job.ranked_flagged,
        )

    def _status(self, s: Session, sub: Submission, *, events: bool = True) -> SubmissionStatus:
        jobs = s.scalars(select(Job).where(Job.submission_id == sub.id).order_by(Job.id)).all()
        waiting = any(j.status == JobStatus.QUEUED for j in jobs)
        online = self._runner_online(s) if waiting else None
        return SubmissionStatus(
            submission_id=sub.id,
            leaderboard=sub.leaderboard.name,
            user_name=sub.user.name,
            file_name=sub.file_name,
            mode=SubmissionMode(sub.mode),
            created_at=sub.created_at,
            deleted=sub.deleted,
            jobs=tuple(self._job_view(s, j, events=events, online=online) for j in jobs),
            comparison=self._comparison_view(s, sub, jobs),
            moderation=sub.moderation,
            moderation_note=author_text(sub.moderation, sub.moderation_reason),
        )

    def _comparison_view(self, s: Session, sub: Submission, jobs: Sequence[Job]) -> ComparisonView | None:
        if sub.mode != SubmissionMode.COMPARE.value:
            return None
        row = s.get(SubmissionComparison, sub.id)
        if row is None:  # (a compare row is written with its submission; never missing but by hand)
            return None
        return ComparisonView(
            file_a=sub.file_name,
            file_b=row.file_b_name,
            code_b_sha256=row.code_b.sha256,
            device=jobs[0].device if jobs else "",
            rounds=row.rounds,
            result=Comparison.model_validate(row.result) if row.result is not None else None,
        )

    def _check_devices(self, lb: Leaderboard, devices: Sequence[str] | None) -> list[str]:
        allowed = list(lb.devices)
        if not devices:
            if len(allowed) == 1:
                return allowed
            raise DeviceNotAllowed(lb.name, None, allowed)
        by_lower = {d.lower(): d for d in allowed}
        chosen: list[str] = []
        for d in devices:
            canonical = by_lower.get(d.strip().lower())
            if canonical is None:
                raise DeviceNotAllowed(lb.name, d, allowed)
            if canonical not in chosen:
                chosen.append(canonical)
        return chosen


def check_file_language(board: str, lang_name: str, name: str) -> None:
    """Refuse a file of another language than the board's (``lang_name``, ``Leaderboard.lang``)."""
    lang = LANGUAGES[Language(lang_name)]
    if not lang.takes(name):
        raise InvalidSubmission(
            f"Leaderboard {board!r} takes {lang.short} files ({', '.join(lang.suffixes)}); {name!r} is not one.",
            code="wrong_file_type",
        )
