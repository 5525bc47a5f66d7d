"""What each viewer may see of a submission: its owner and admins everything public, anyone else nothing —
except the code of a ranked entry after its leaderboard's deadline when the problem set made code public.

Someone else's submission is answered exactly like a missing one (``SubmissionNotFound``), so ids leak nothing.

And what everyone may see of a leaderboard over time: its score history, bounded (``score_history``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from leaderboards import ranking
from leaderboards.errors import InvalidChange, InvalidSubmission, SubmissionNotFound
from leaderboards.events import Follower, Progress, ProgressUpdate, follow, follow_async
from leaderboards.models import BestScore, Job, Run, Submission, SubmissionComparison, User
from leaderboards.results import (
    HistoryPoint,
    HistorySeries,
    PublicResult,
    ScoreHistory,
    SubmissionCodeView,
    SubmissionDetails,
    SubmissionStatus,
    UserRef,
)
from leaderboards.service_base import ServiceBase
from runners.contract import RunResult

HISTORY_MAX_SERIES = 100
"""Most users' series in one history answer (page with ``offset``)."""
HISTORY_MAX_POINTS = 500
"""Most points in one series of a history answer."""
HISTORY_CHART_POINTS = 200
"""Points of the leaderboard's best over time that a chart (the web page, the bot) draws."""


def _points(steps: list[ranking.Step]) -> tuple[HistoryPoint, ...]:
    return tuple(HistoryPoint(s.submitted_at, s.score, s.submission_id) for s in steps)


class ViewingMixin(ServiceBase):
    """Reading one submission: status, details, code, and following its progress; a leaderboard's score history."""

    def score_history_page(
        self,
        leaderboard: str,
        device: str | None = None,
        *,
        limit: int = 10,
        offset: int = 0,
        max_points: int = 100,
        programs: bool | None = None,
        viewer: UserRef | None = None,
    ) -> ScoreHistory:
        """Best score over time on one device: the leaderboard's (the record) and, for a page of the ranked users
        in ranking order, each one's own; only the steps where a best improved, at most ``max_points`` per series
        (the first, the current best, and evenly spread steps between). Banned users are left out; programs as in
        ``ranking``. Bounded whatever is stored: ``limit`` <= HISTORY_MAX_SERIES, ``max_points`` <=
        HISTORY_MAX_POINTS."""
        if not 1 <= limit <= HISTORY_MAX_SERIES:
            raise InvalidChange(f"limit is 1 to {HISTORY_MAX_SERIES} series; page with offset.", field="limit")
        if not 2 <= max_points <= HISTORY_MAX_POINTS:
            raise InvalidChange(f"points is 2 to {HISTORY_MAX_POINTS} per series.", field="points")
        if offset < 0:
            raise InvalidChange("offset is 0 or more.", field="offset")
        programs = self.settings.rankings_show_programs if programs is None else programs
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False, viewer=viewer)
            (dev,) = self._check_devices(lb, [device] if device else None)
            here = (BestScore.leaderboard_id == lb.id, BestScore.device == dev, ranking.shown_users(programs))
            total = s.scalar(
                select(func.count()).select_from(BestScore).join(User, User.id == BestScore.user_id).where(*here)
            )
            page = s.execute(
                select(BestScore.user_id, User.name, User.is_program)
                .join(User, User.id == BestScore.user_id)
                .where(*here)
                .order_by(BestScore.score, BestScore.submitted_at, BestScore.submission_id)
                .offset(offset or None)
                .limit(limit)
            ).all()
            steps = ranking.history_series(s, lb, dev, [uid for uid, _, _ in page], max_points=max_points)
            best, records = ranking.best_over_time(s, lb, dev, max_points=max_points, programs=programs)
            series = tuple(
                HistorySeries(offset + i, uid, name, is_program, _points(steps[uid][0]), steps[uid][1] > max_points)
                for i, (uid, name, is_program) in enumerate(page, start=1)
            )
            return ScoreHistory(
                leaderboard=lb.name,
                device=dev,
                best=_points(best),
                series=series,
                total=int(total or 0),
                offset=offset,
                limit=limit,
                max_points=max_points,
                best_thinned=records > max_points,
            )

    def score_history(
        self, leaderboard: str, device: str | None = None, *, viewer: UserRef | None = None
    ) -> tuple[tuple[datetime, float], ...]:
        """The leaderboard's best score over time on one device, (when, score) oldest first, at most
        HISTORY_CHART_POINTS steps (banned users left out): what a "best score over time" chart draws."""
        history = self.score_history_page(
            leaderboard, device, limit=1, max_points=HISTORY_CHART_POINTS, viewer=viewer
        )
        return tuple((p.submitted_at, p.score_ns) for p in history.best)

    def submission_details(self, submission_id: int, user: UserRef | None, *, admin: bool = False) -> SubmissionDetails:
        """The owner's view of a submission (or an admin's, ``admin=True``): code and public results. Secret runs
        are never shown. Anyone else's submission is ``SubmissionNotFound``, exactly like a missing one."""
        with self.db.transaction() as s:
            sub = self._owned(s, submission_id, user, admin=admin)
            public = s.execute(
                select(Job.device, Run.result)
                .join(Run, Run.job_id == Job.id)
                .where(Job.submission_id == sub.id, Run.secret.is_(False))
                .order_by(Job.id)
            ).all()
            return SubmissionDetails(
                status=self._status(s, sub),
                code=sub.code.content.decode("utf-8", errors="replace"),
                code_sha256=sub.code.sha256,
                results=tuple(PublicResult(device, RunResult.model_validate(result)) for device, result in public),
            )

    def submission_status_of(
        self, submission_id: int, user: UserRef | None, *, admin: bool = False
    ) -> SubmissionStatus:
        """``submission_status`` for its owner (or an admin); anyone else gets ``SubmissionNotFound``."""
        with self.db.transaction() as s:
            return self._status(s, self._owned(s, submission_id, user, admin=admin))

    def submission_code(
        self, submission_id: int, user: UserRef | None, *, admin: bool = False, second: bool = False
    ) -> SubmissionCodeView:
        """A submission's code: always for its owner and admins; for anyone else only when it is an entry of its
        leaderboard's ranking, the deadline has passed and the problem set made code public after it
        (``code_public_after_deadline``), and, on a hidden leaderboard, ``user`` is a member. Otherwise
        ``SubmissionNotFound``, as for a missing submission. ``second``: a compare's second file (B);
        ``InvalidSubmission`` for a submission of one file."""
        with self.db.transaction() as s:
            sub = s.get(Submission, submission_id)
            if sub is None:
                raise SubmissionNotFound(submission_id)
            mine = user is not None and sub.user.identity == user.identity and not sub.deleted
            public = self._code_is_public(s, sub, user)
            if not (admin or mine or public):
                raise SubmissionNotFound(submission_id, mine=True)
            name, code = sub.file_name, sub.code
            if second:
                compared = s.get(SubmissionComparison, submission_id)
                if compared is None:
                    raise InvalidSubmission(
                        f"submission {submission_id} has one file; only a compare has a second (file B)"
                    )
                name, code = compared.file_b_name, compared.code_b
            return SubmissionCodeView(
                submission_id=sub.id,
                leaderboard=sub.leaderboard.name,
                user_name=sub.user.name,
                file_name=name,
                code=code.content.decode("utf-8", errors="replace"),
                code_sha256=code.sha256,
                public=public,
            )

    def _owned(self, s: Session, submission_id: int, user: UserRef | None, *, admin: bool) -> Submission:
        sub = s.get(Submission, submission_id)
        if sub is None:
            raise SubmissionNotFound(submission_id)
        if not admin and (user is None or sub.user.identity != user.identity or sub.deleted):
            raise SubmissionNotFound(submission_id, mine=True)
        return sub

    def _code_is_public(self, s: Session, sub: Submission, viewer: UserRef | None) -> bool:
        """Whether ``viewer`` may read the entry's code as anyone may: a ranked entry after the deadline of a board
        that makes code public then, and that ``viewer`` sees (a hidden board: its members only)."""
        lb = sub.leaderboard
        if sub.deleted or not lb.code_public_after_deadline or self.clock() < lb.deadline or sub.user.is_banned:
            return False
        if not lb.visible and not self._member(s, lb.id, viewer):
            return False
        return s.scalar(select(BestScore.id).where(BestScore.submission_id == sub.id).limit(1)) is not None

    # -- following progress (the one follower: ``leaderboards.events.Follower``) -----------------------------

    def follower(self, submission_id: int, *, after_id: int = 0) -> Follower:
        """A ``Follower`` of the submission: each blocking ``poll()`` returns what changed since the last one."""
        return Follower(self.db, submission_id, after_id=after_id)

    def follow(
        self,
        submission_id: int,
        *,
        poll_s: float = 0.2,
        timeout_s: float = 3600.0,
        on_poll: Callable[[], None] | None = None,
        after_id: int = 0,
    ) -> Iterator[ProgressUpdate]:
        """The submission's progress updates until it is done (blocking; see ``leaderboards.events.follow``)."""
        return follow(self.db, submission_id, poll_s=poll_s, timeout_s=timeout_s, on_poll=on_poll, after_id=after_id)

    def follow_async(
        self, submission_id: int, *, poll_s: float = 0.5, timeout_s: float = 3600.0, after_id: int = 0
    ) -> AsyncIterator[Progress]:
        """One ``Progress`` per poll until the submission is done (see ``leaderboards.events.follow_async``)."""
        return follow_async(self.db, submission_id, poll_s=poll_s, timeout_s=timeout_s, after_id=after_id)
