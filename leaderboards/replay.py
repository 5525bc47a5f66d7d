"""Replays (issue 33): a stored run timed again with its own seeds, to see whether it holds.

- ``replay`` stores a new submission of the same file, leaderboard and mode, one job per device on which the original
  has a finished run, owned by whoever asked (their limits and GPU budget pay for it; after the board's deadline,
  like any submission then, the practice limit, one per device, and the late mark), marked in
  ``submission_origins.replay_of``. Its runs use the original's seeds: the public inputs are the problem's, the same
  for every submission; a ranked run's secret-seed inputs are derived from the original's id
  (``RecordingMixin.run_requests`` reads the origin), so a replay times exactly the inputs the original was timed on.
- A replay never ranks (``ranking.practice_only`` and the ranking's SQL leave replays out) and is never de-duplicated.
- Who may: the original's owner for a test, benchmark or profile run; an admin for any, a ranked run's included (it
  re-runs the secret-seed inputs, which an owner must not be able to probe). A compare is not replayed: compare
  again (a compare is already a repeated measurement).
- ``replay_report`` compares a replay with its original, per device: the verdicts, and per benchmark case whether
  the replay's median lies within the original's 95% interval of its median.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboards.errors import InvalidSubmission, NotFound, PermissionDenied
from leaderboards.models import Job, JobStatus, Leaderboard, Run, Submission, SubmissionOrigin, User
from leaderboards.results import SubmissionMode, SubmissionReceipt, UserRef
from leaderboards.service_base import ServiceBase
from runners.contract import RunResult, TimingStats

if TYPE_CHECKING:
    from leaderboards.moderation import Screening

Z95 = 1.959964
MEDIAN_EFFICIENCY = 1.2533
"""The standard error of a median of normal samples is about 1.2533 times the standard error of their mean."""


class ReplayNotAllowed(PermissionDenied):
    code = "replay_not_allowed"


def median_interval(stats: TimingStats) -> tuple[float, float]:
    """The 95% interval of a case's median: median ± 1.96 · 1.2533 · the standard error of the mean."""
    half = Z95 * MEDIAN_EFFICIENCY * stats.stderr_ns
    return stats.median_ns - half, stats.median_ns + half


@dataclass(frozen=True)
class ReplayCase:
    index: int
    original_median_ns: float | None
    original_low_ns: float | None
    original_high_ns: float | None
    replay_median_ns: float | None
    within: bool | None
    """The replay's median lies within the original's 95% interval (None: one of them was not timed)."""


@dataclass(frozen=True)
class ReplayDevice:
    device: str
    original_verdict: str | None
    replay_status: str
    replay_verdict: str | None
    same_verdict: bool | None
    """None until the replay's job finished."""
    cases: tuple[ReplayCase, ...]


@dataclass(frozen=True)
class ReplayReport:
    submission_id: int
    replay_of: int
    mode: str
    done: bool
    devices: tuple[ReplayDevice, ...]

    @property
    def holds(self) -> bool | None:
        """Every verdict is the same and every timed case within its interval; None until done."""
        if not self.done:
            return None
        return all(d.same_verdict for d in self.devices) and all(
            c.within is not False for d in self.devices for c in d.cases
        )


def replayed(s: Session, submission_id: int) -> int | None:
    """The submission a replay re-times (None: not a replay)."""
    return s.scalar(select(SubmissionOrigin.replay_of).where(SubmissionOrigin.submission_id == submission_id))


class ReplayMixin(ServiceBase):
    """``replay`` and ``replay_report`` (``LeaderboardService``)."""

    if TYPE_CHECKING:  # defined by LeaderboardService and its other parts

        def _owned(self, s: Session, submission_id: int, user: UserRef | None, *, admin: bool) -> Submission: ...
        def _open_board(self, s: Session, user: UserRef, leaderboard: str) -> tuple[User, Leaderboard]: ...
        def _check_budget(self, s: Session, user_id: int, token_id: int | None, now: datetime) -> None: ...
        def _screen(
            self, user: UserRef, leaderboard: str, file_name: str, mode: str, content: bytes
        ) -> Screening | None: ...
        def _flag_screened(self, s: Session, sub: Submission, screening: Screening | None) -> None: ...
        def _check_pending(self, s: Session, u: User, new_jobs: int, *, compare_rounds: int = 0) -> None: ...
        def _check_practice(self, s: Session, u: User, lb: Leaderboard, now: datetime, cost: int = 1) -> None: ...
        @staticmethod
        def _mark_late(s: Session, sub: Submission) -> None: ...
        def _check_rate(
            self, s: Session, u: User, lb: Leaderboard, mode: SubmissionMode, now: datetime, *, cost: int = 1
        ) -> None: ...
        def _queue_jobs(
            self, s: Session, sub: Submission, devices: Sequence[str], now: datetime, detail: str = ""
        ) -> list[Job]: ...
        def _note_origin(
            self, s: Session, submission_id: int, token_id: int | None, replay_of: int | None = None
        ) -> None: ...
        def _receipt(
            self, s: Session, sub: Submission, *, jobs: Sequence[Job] | None = None, duplicate: bool = False
        ) -> SubmissionReceipt: ...

    def replay(
        self, submission_id: int, user: UserRef, *, admin: bool = False, token_id: int | None = None
    ) -> SubmissionReceipt:
        """Queue a replay of a stored submission (see the module's text); answers the replay's receipt."""
        now = self.clock()
        with self.db.transaction() as s:  # what it replays, and the limits, first: the screening hook may take seconds
            original, devices = self._replay_source(s, submission_id, user, admin=admin)
            self._admit_replay(s, user, original, devices, admin=admin, token_id=token_id, now=now)
            board, name, mode = original.leaderboard.name, original.file_name, original.mode
            content = original.code.content
        # Screened as a new submission is: the operator's hook may refuse now what it passed then (a new rule, or a
        # hook that was down), and a replay runs the file again (red team, 2026-11-29).
        screening = self._screen(user, board, name, mode, content)
        with self.db.transaction() as s:
            original, devices = self._replay_source(s, submission_id, user, admin=admin)
            u, lb, devices, late = self._admit_replay(
                s, user, original, devices, admin=admin, token_id=token_id, now=now
            )
            sub = Submission(
                user_id=u.id,
                leaderboard_id=lb.id,
                code_id=original.code_id,
                file_name=original.file_name,
                mode=original.mode,
                created_at=now,
            )
            s.add(sub)
            s.flush()
            self._note_origin(s, sub.id, token_id, replay_of=original.id)
            self._flag_screened(s, sub, screening)
            if late:
                self._mark_late(s, sub)
            jobs = self._queue_jobs(s, sub, devices, now, detail=f"replay of #{original.id}")
            return self._receipt(s, sub, jobs=jobs)

    def _admit_replay(
        self,
        s: Session,
        user: UserRef,
        original: Submission,
        devices: list[str],
        *,
        admin: bool,
        token_id: int | None,
        now: datetime,
    ) -> tuple[User, Leaderboard, list[str], bool]:
        """A replay's checks as a submission's: the board (and a ban), its devices (one the board no longer offers
        is refused, named), the hourly or practice limit (not for an admin), the budget and the pending quota."""
        u, lb = self._open_board(s, user, original.leaderboard.name)
        devices = self._check_devices(lb, devices)
        late = now >= lb.deadline  # as a submission: practice, one per device, and marked late
        if late:
            if not admin:
                self._check_practice(s, u, lb, now, cost=len(devices))
        elif not admin:
            self._check_rate(s, u, lb, SubmissionMode(original.mode), now, cost=len(devices))
        self._check_budget(s, u.id, token_id, now)
        self._check_pending(s, u, len(devices))
        return u, lb, devices, late

    def _replay_source(
        self, s: Session, submission_id: int, user: UserRef, *, admin: bool
    ) -> tuple[Submission, list[str]]:
        """The submission a replay re-times (the first original of a replay of a replay) and its devices, after the
        checks that refuse it: not the user's, a compare, a ranked one for anyone but an admin, nothing finished."""
        original = self._owned(s, submission_id, user, admin=admin)
        root = replayed(s, original.id) or original.id  # a replay of a replay re-times the first original
        if root != original.id:
            original = self._owned(s, root, None, admin=True)
        if original.mode == SubmissionMode.COMPARE.value:
            raise InvalidSubmission(
                f"#{original.id} is a compare, which is not replayed: compare the two files again.",
                code="replay_of_compare",
            )
        if original.mode == SubmissionMode.RANKED.value and not admin:
            raise ReplayNotAllowed(
                f"#{original.id} is a ranked submission: replaying it re-runs its secret-seed inputs, which only "
                "an admin may do. Replay a benchmark run of the same file instead (submit it with mode "
                "benchmark, then replay that)."
            )
        devices = sorted(
            s.scalars(
                select(Job.device)
                .join(Run, Run.job_id == Job.id)
                .where(Job.submission_id == original.id, Run.secret.is_(False))
                .distinct()
            )
        )
        if not devices:
            raise InvalidSubmission(
                f"#{original.id} has no finished run to replay yet; wait for it to finish.",
                code="nothing_to_replay",
            )
        return original, devices

    def replay_report(self, submission_id: int, user: UserRef | None, *, admin: bool = False) -> ReplayReport:
        """A replay beside its original: verdicts, and each timed case's median against the original's interval."""
        with self.db.transaction() as s:
            sub = self._owned(s, submission_id, user, admin=admin)
            root = replayed(s, sub.id)
            if root is None:
                raise NotFound(
                    f"#{sub.id} is not a replay; POST /api/v1/submissions/{sub.id}/replay makes one.",
                    code="not_a_replay",
                )
            original = {job.device: job for job in s.scalars(select(Job).where(Job.submission_id == root))}
            devices = []
            for job in s.scalars(select(Job).where(Job.submission_id == sub.id).order_by(Job.id)):
                old = original.get(job.device)
                old_result = _public_result(s, old.id) if old is not None else None
                new_result = _public_result(s, job.id)
                finished = JobStatus(job.status).finished
                old_verdict = old.verdict if old is not None else None
                devices.append(
                    ReplayDevice(
                        device=job.device,
                        original_verdict=old_verdict,
                        replay_status=job.status,
                        replay_verdict=job.verdict,
                        same_verdict=(job.verdict == old_verdict) if finished else None,
                        cases=_cases(old_result, new_result),
                    )
                )
            done = all(d.same_verdict is not None for d in devices)
            return ReplayReport(sub.id, root, sub.mode, done, tuple(devices))


def _public_result(s: Session, job_id: int) -> RunResult | None:
    raw = s.scalar(select(Run.result).where(Run.job_id == job_id, Run.secret.is_(False)))
    return RunResult.model_validate(raw) if raw is not None else None


def _cases(old: RunResult | None, new: RunResult | None) -> tuple[ReplayCase, ...]:
    if old is None:
        return ()
    replay = {b.index: b.stats for b in new.benchmarks} if new is not None else {}
    cases = []
    for bench in old.benchmarks:
        again = replay.get(bench.index)
        if bench.stats is None:
            cases.append(ReplayCase(bench.index, None, None, None, again.median_ns if again else None, None))
            continue
        low, high = median_interval(bench.stats)
        within = None if again is None else low <= again.median_ns <= high
        cases.append(
            ReplayCase(bench.index, bench.stats.median_ns, low, high, again.median_ns if again else None, within)
        )
    return tuple(cases)


def seed_submission(s: Session, sub: Submission) -> int:
    """Whose id a submission's secret-seed inputs are derived from: a replay's original's, else its own."""
    return replayed(s, sub.id) or sub.id
