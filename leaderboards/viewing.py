"""What each viewer may see of a submission: its owner and admins everything public, anyone else nothing —
except the code of a ranked entry after its leaderboard's deadline when the problem set made code public.

Someone else's submission is answered exactly like a missing one (``SubmissionNotFound``), so ids leak nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboards.errors import InvalidSubmission, SubmissionNotFound
from leaderboards.events import Follower, Progress, ProgressUpdate, follow, follow_async
from leaderboards.models import BestScore, Job, Run, Submission, SubmissionComparison
from leaderboards.results import PublicResult, SubmissionCodeView, SubmissionDetails, SubmissionStatus, UserRef
from leaderboards.service_base import ServiceBase
from runners.contract import RunResult


class ViewingMixin(ServiceBase):
    """Reading one submission: status, details, code, and following its progress."""

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
        (``code_public_after_deadline``). Otherwise ``SubmissionNotFound``, as for a missing submission.
        ``second``: a compare's second file (B); ``InvalidSubmission`` for a submission of one file."""
        with self.db.transaction() as s:
            sub = s.get(Submission, submission_id)
            if sub is None:
                raise SubmissionNotFound(submission_id)
            mine = user is not None and sub.user.identity == user.identity and not sub.deleted
            public = self._code_is_public(s, sub)
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

    def _code_is_public(self, s: Session, sub: Submission) -> bool:
        lb = sub.leaderboard
        if sub.deleted or not lb.code_public_after_deadline or self.clock() < lb.deadline or sub.user.is_banned:
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
