"""Batches (issue 33): up to ``KERNELCUP_BATCH_MAX_CANDIDATES`` candidates for one problem, device and mode in one
call, stored at once, followed by one id.

- ``submit_batch`` checks what concerns the whole batch first (the leaderboard, the device, the mode, the GPU budget,
  the hourly limit with every file sent as its cost, the pending-job quota, the daily new-file cap) after each
  file's cheap checks (name, size, text) and refuses the batch as a whole when one fails: nothing is stored, and no
  candidate was compiled, fingerprinted or screened. Then each candidate is checked alone (language, syntax, the
  screening hook): one that fails is kept as a refused item with its error; when none is left the batch is refused
  whole (``no_candidate_can_run``). The whole batch's checks run again under the user's row lock with the candidates
  that can run as the cost (each one's language again), and those are stored as submissions with their job, all in
  one transaction. A candidate identical to one the account sent a moment ago
  (the duplicate window) answers with that earlier submission, as ``submit`` does; ``force`` runs it again.
- The pending-job quota of a batch is the larger of the account's quota and the batch size, so a program whose
  quota is 20 can still send a batch of 64 once its earlier work is done.
- ``batch`` answers every item: its submission, status, verdict and, once finished, its reward record
  (``leaderboards/reward.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from leaderboards.directives import parse_directives
from leaderboards.errors import InvalidSubmission, NotFound, RateLimited, UserError
from leaderboards.models import (
    Batch,
    BatchItem,
    Job,
    JobStatus,
    Leaderboard,
    Run,
    Submission,
    User,
)
from leaderboards.results import SubmissionMode, UserRef
from leaderboards.reward import reward_record
from leaderboards.service_base import ServiceBase, check_file_language
from runners.contract import Mode, RunResult

if TYPE_CHECKING:
    from leaderboards.moderation import Screening


class BatchNotFound(NotFound):
    code = "batch_not_found"


@dataclass(frozen=True)
class BatchItemView:
    """One candidate of a batch, in the order it was sent."""

    position: int
    file_name: str
    submission_id: int | None
    """None: refused (``error_*`` say why)."""
    status: str
    """``refused``, or its job's status: queued, running, succeeded, failed, timed_out, cancelled."""
    verdict: str | None
    score_ns: float | None
    duplicate: bool
    """Answered by an earlier submission of the same file (the duplicate window)."""
    error_code: str | None
    error_message: str | None
    error_field: str | None
    reward: dict[str, Any] | None
    """The reward record (``docs/schemas/reward.schema.json``) once finished (or refused), else None."""

    @property
    def finished(self) -> bool:
        return self.status == "refused" or JobStatus(self.status).finished


@dataclass(frozen=True)
class BatchView:
    batch_id: int
    leaderboard: str
    device: str
    mode: str
    user_name: str
    created_at: datetime
    items: tuple[BatchItemView, ...]

    @property
    def finished(self) -> int:
        return sum(1 for i in self.items if i.finished)

    @property
    def done(self) -> bool:
        return all(i.finished for i in self.items)


@dataclass(frozen=True)
class DeviceReward:
    device: str
    status: str
    reward: dict[str, Any] | None
    """The reward record (``docs/schemas/reward.schema.json``) once the job finished, else None."""


@dataclass(frozen=True)
class SubmissionRewards:
    submission_id: int
    done: bool
    rewards: tuple[DeviceReward, ...]


class BatchesMixin(ServiceBase):
    """``submit_batch`` and ``batch`` (``LeaderboardService``)."""

    if TYPE_CHECKING:  # defined by LeaderboardService and its other parts

        def _open_board(self, s: Session, user: UserRef, leaderboard: str) -> tuple[User, Leaderboard]: ...
        def _check_content(
            self, file_name: str, content: bytes, *, field: str = "file", costly: bool = True
        ) -> str: ...
        def _check_costly(self, name: str, content: bytes, *, field: str = "file") -> None: ...
        def _check_language(self, lb: Leaderboard, name: str) -> None: ...
        def _check_rate(
            self, s: Session, u: User, lb: Leaderboard, mode: SubmissionMode, now: datetime, *, cost: int = 1
        ) -> None: ...
        def _check_practice(self, s: Session, u: User, lb: Leaderboard, now: datetime, cost: int = 1) -> None: ...
        def _check_new_files(self, s: Session, u: User, digests: Sequence[str], now: datetime) -> None: ...
        def _check_budget(self, s: Session, user_id: int, token_id: int | None, now: datetime) -> None: ...
        def _duplicate(
            self, s: Session, u: User, lb: Leaderboard, digest: str, mode: Mode, devices: Sequence[str], now: datetime
        ) -> Submission | None: ...
        def _pending_runs(self, s: Session, u: User) -> int: ...
        def _owned(self, s: Session, submission_id: int, user: UserRef | None, *, admin: bool) -> Submission: ...
        def _store_submission(
            self,
            s: Session,
            u: User,
            lb: Leaderboard,
            name: str,
            content: bytes,
            mode: Mode,
            now: datetime,
            token_id: int | None,
            late: bool,
            licence: str | None,
            header_licence: str | None,
        ) -> Submission: ...
        def _queue_jobs(
            self, s: Session, sub: Submission, devices: Sequence[str], now: datetime, detail: str = ""
        ) -> list[Job]: ...
        def _screen(
            self, user: UserRef, leaderboard: str, file_name: str, mode: str, content: bytes
        ) -> Screening | None: ...
        def _flag_screened(self, s: Session, sub: Submission, screening: Screening | None) -> None: ...

    def submit_batch(
        self,
        user: UserRef,
        files: Sequence[tuple[str, bytes]],
        leaderboard: str,
        device: str | None = None,
        mode: Mode | str | None = None,
        *,
        token_id: int | None = None,
        force: bool = False,
    ) -> BatchView:
        """Store a batch of candidates (``(file_name, content)`` each) for one leaderboard, device and mode (default
        benchmark), one job each; see the module's text for what refuses the batch and what refuses one candidate."""
        limit = self.settings.batch_max_candidates
        if not files:
            raise InvalidSubmission("A batch needs at least one candidate file.", code="empty_batch", field="files")
        if len(files) > limit:
            raise InvalidSubmission(
                f"A batch takes at most {limit} candidates ({len(files)} sent); split it into batches of {limit}.",
                code="batch_too_large",
                field="files",
            )
        if not (leaderboard or "").strip():
            raise InvalidSubmission("Name the leaderboard of the batch.", code="no_leaderboard", field="leaderboard")
        chosen_mode = _batch_mode(mode)
        now = self.clock()
        # Each file's cheap checks (name, size, text), then what concerns the whole batch with every file sent
        # counted (a few reads), then each file's costly checks: a batch refused as a whole costs no compile,
        # fingerprint or screening of 64 candidates (red team, 2026-11-29).
        cheap: list[tuple[str, bytes, UserError | None]] = []
        for name, content in files:
            try:
                cheap.append((self._check_content(name, content, costly=False), content, None))
            except UserError as exc:
                cheap.append((name[-255:] or "(no name)", content, exc))
        with self.db.transaction() as s:
            u, lb, dev, _ = self._admit_batch(s, user, leaderboard, device, chosen_mode, len(files), token_id, now)
            self._check_new_files(s, u, sorted({hashlib.sha256(c[1]).hexdigest() for c in cheap if c[2] is None}), now)
            board, lang = lb.name, lb.lang
        checked: list[tuple[str, bytes, UserError | None, Screening | None]] = []
        for name, content, error in cheap:
            if error is not None:
                checked.append((name, content, error, None))
                continue
            try:
                check_file_language(board, lang, name)
                self._check_costly(name, content)
                screening = self._screen(user, leaderboard, name, chosen_mode.value, content)  # before any lock
                checked.append((name, content, None, screening))
            except UserError as exc:
                checked.append((name, content, exc, None))
        good = [c for c in checked if c[2] is None]
        if not good:  # nothing would run: refused whole, nothing stored
            reasons = "; ".join(f"{name}: {error.message}" for name, _, error, _ in checked if error is not None)
            raise InvalidSubmission(
                f"None of the {len(checked)} candidates can run, so nothing was stored: {_bounded(reasons)}",
                code="no_candidate_can_run",
                field="files",
            )
        with self.db.transaction() as s:  # the same checks again under the user's row lock, counting what runs
            u, lb, dev, late = self._admit_batch(s, user, leaderboard, device, chosen_mode, len(good), token_id, now)
            self._check_new_files(s, u, sorted({hashlib.sha256(c[1]).hexdigest() for c in good}), now)
            batch = Batch(user_id=u.id, token_id=token_id, leaderboard_id=lb.id, device=dev, mode=chosen_mode.value)
            batch.created_at = now
            s.add(batch)
            s.flush()
            for position, (name, content, error, screening) in enumerate(checked):
                if error is None:  # again under the lock: a resync may have changed the board's language meanwhile
                    try:
                        self._check_language(lb, name)
                    except UserError as exc:
                        error = exc
                if error is not None:
                    s.add(BatchItem(batch_id=batch.id, position=position, file_name=name, error=_error(error)))
                    continue
                earlier = None
                if not force:
                    earlier = self._duplicate(s, u, lb, hashlib.sha256(content).hexdigest(), chosen_mode, [dev], now)
                if earlier is None:
                    header = parse_directives(content.decode("utf-8")).licence
                    earlier = self._store_submission(
                        s, u, lb, name, content, chosen_mode, now, token_id, late, None, header
                    )
                    self._flag_screened(s, earlier, screening)
                    self._queue_jobs(s, earlier, [dev], now, detail="batch")
                    duplicate = False
                else:
                    duplicate = True
                s.add(
                    BatchItem(
                        batch_id=batch.id,
                        position=position,
                        file_name=name,
                        submission_id=earlier.id,
                        error={"duplicate": True} if duplicate else None,
                    )
                )
            s.flush()
            return self._batch_view(s, batch)

    def _admit_batch(
        self,
        s: Session,
        user: UserRef,
        leaderboard: str,
        device: str | None,
        mode: Mode,
        size: int,
        token_id: int | None,
        now: datetime,
    ) -> tuple[User, Leaderboard, str, bool]:
        """The board (and a ban), the device, the budget, the hourly or practice limit and the pending quota for a
        batch of ``size`` candidates; the user, the board, the device and whether it is late."""
        u, lb = self._open_board(s, user, leaderboard)
        (dev,) = self._one_device(lb, device)
        self._check_budget(s, u.id, token_id, now)
        late = now >= lb.deadline
        if late:  # every candidate counts against the practice limit, as each single submission does
            self._check_practice(s, u, lb, now, cost=size)
        else:
            self._check_batch_rate(s, u, lb, SubmissionMode(mode.value), now, size)
        self._check_batch_pending(s, u, size)
        return u, lb, dev, late

    def _check_batch_rate(
        self, s: Session, u: User, lb: Leaderboard, mode: SubmissionMode, now: datetime, size: int
    ) -> None:
        """The hourly limit with the batch's size as its cost; a batch larger than the limit itself can never run."""
        try:
            self._check_rate(s, u, lb, mode, now, cost=size)
        except InvalidSubmission as exc:
            if exc.code != "too_many_rounds":  # the limit's own words for "more than the limit at once"
                raise
            limit = exc.message.split("more than ", 1)[-1].split(";", 1)[0]
            raise InvalidSubmission(
                f"A batch of {size} candidates is more than {limit}; send a smaller batch.",
                code="batch_over_rate_limit",
                field="files",
            ) from None

    def _one_device(self, lb: Leaderboard, device: str | None) -> tuple[str]:
        wanted = (device or "").strip()
        if not wanted:
            if len(lb.devices) == 1:
                return (lb.devices[0],)
            raise InvalidSubmission(
                f"A batch runs on one device; name one of {', '.join(lb.devices)} as `device`.",
                code="one_device",
                field="device",
            )
        (chosen,) = self._check_devices(lb, [wanted])
        return (chosen,)

    def _check_batch_pending(self, s: Session, u: User, new_jobs: int) -> None:
        """At most max(the account's pending-job quota, the batch limit) runs waiting or running with this batch."""
        pending = self._pending_runs(s, u)
        quota = self.settings.program_max_pending_jobs if u.is_program else self.settings.max_pending_jobs_per_user
        cap = max(quota, self.settings.batch_max_candidates)
        if pending + new_jobs > cap:
            raise RateLimited(
                f"You have {pending} runs waiting or running; with this batch's {new_jobs} that is more than the "
                f"{cap} a batch may join. Wait for some to finish, or send a smaller batch (at most {cap - pending} "
                "now).",
                self.clock() + timedelta(minutes=1),
                code="pending_quota",
            )

    def batch(self, batch_id: int, user: UserRef | None, *, admin: bool = False) -> BatchView:
        """A batch and every candidate's state, for its owner (or an admin); anyone else gets ``BatchNotFound``."""
        with self.db.transaction() as s:
            batch = s.get(Batch, batch_id)
            owner = s.get(User, batch.user_id) if batch is not None else None
            if batch is None or owner is None or (not admin and (user is None or owner.identity != user.identity)):
                raise BatchNotFound(f"There is no batch #{batch_id} of yours.", field="batch_id")
            return self._batch_view(s, batch)

    def batch_finished(self, batch_id: int) -> int:
        """How many of a batch's candidates have finished, refused ones included: one cheap query, which a batch's
        event stream polls before it reads the whole batch again (ownership is the caller's check: ``batch``)."""
        finished = [status.value for status in JobStatus if status.finished]
        with self.db.transaction() as s:
            refused = s.scalar(
                select(func.count())
                .select_from(BatchItem)
                .where(BatchItem.batch_id == batch_id, BatchItem.submission_id.is_(None))
            )
            done = s.scalar(
                select(func.count())
                .select_from(BatchItem)
                .join(Job, Job.submission_id == BatchItem.submission_id)
                .where(BatchItem.batch_id == batch_id, Job.status.in_(finished))
            )
            return int(refused or 0) + int(done or 0)

    def rewards(self, submission_id: int, user: UserRef | None, *, admin: bool = False) -> SubmissionRewards:
        """The reward record of each of a submission's jobs (one per device; None until it finished), for its owner
        (or an admin)."""
        with self.db.transaction() as s:
            sub = self._owned(s, submission_id, user, admin=admin)
            results = {
                job_id: RunResult.model_validate(result)
                for job_id, result in s.execute(
                    select(Run.job_id, Run.result).where(Run.submission_id == sub.id, Run.secret.is_(False))
                )
            }
            rewards = []
            for job in s.scalars(select(Job).where(Job.submission_id == sub.id).order_by(Job.id)):
                view = self._job_view(s, job, events=False)
                record = reward_record(view, results.get(job.id), moderation=sub.moderation) if view.finished else None
                rewards.append(DeviceReward(job.device, view.status.value, record))
            return SubmissionRewards(sub.id, all(r.reward is not None for r in rewards), tuple(rewards))

    def _batch_view(self, s: Session, batch: Batch) -> BatchView:
        lb = s.get(Leaderboard, batch.leaderboard_id)
        owner = s.get(User, batch.user_id)
        items = s.scalars(select(BatchItem).where(BatchItem.batch_id == batch.id).order_by(BatchItem.position)).all()
        ids = [i.submission_id for i in items if i.submission_id is not None]
        jobs = {j.submission_id: j for j in s.scalars(select(Job).where(Job.submission_id.in_(ids)))} if ids else {}
        results = (
            {
                sub_id: RunResult.model_validate(result)
                for sub_id, result in s.execute(
                    select(Run.submission_id, Run.result).where(Run.submission_id.in_(ids), Run.secret.is_(False))
                )
            }
            if ids
            else {}
        )
        moderation = (
            dict(s.execute(select(Submission.id, Submission.moderation).where(Submission.id.in_(ids))).all())
            if ids
            else {}
        )
        views = []
        for item in items:
            job = jobs.get(item.submission_id) if item.submission_id is not None else None
            duplicate = bool(item.error and item.error.get("duplicate"))
            if item.submission_id is None or job is None:
                error = item.error or {"code": "not_found", "message": "This candidate's submission is gone."}
                views.append(
                    BatchItemView(
                        position=item.position,
                        file_name=item.file_name,
                        submission_id=item.submission_id,
                        status="refused",
                        verdict=None,
                        score_ns=None,
                        duplicate=False,
                        error_code=error.get("code"),
                        error_message=error.get("message"),
                        error_field=error.get("field"),
                        reward=reward_record(None, None, refused=True),
                    )
                )
                continue
            view = self._job_view(s, job, events=False)
            result = results.get(item.submission_id)
            views.append(
                BatchItemView(
                    position=item.position,
                    file_name=item.file_name,
                    submission_id=item.submission_id,
                    status=view.status.value,
                    verdict=view.verdict.value if view.verdict else None,
                    score_ns=view.score_ns,
                    duplicate=duplicate,
                    error_code=None,
                    error_message=view.error,
                    error_field=None,
                    reward=(
                        reward_record(view, result, duplicate=duplicate, moderation=moderation.get(item.submission_id))
                        if view.finished
                        else None
                    ),
                )
            )
        return BatchView(
            batch_id=batch.id,
            leaderboard=lb.name if lb is not None else "",
            device=batch.device,
            mode=batch.mode,
            user_name=owner.name if owner is not None else "",
            created_at=batch.created_at,
            items=tuple(views),
        )


def _batch_mode(mode: Mode | str | None) -> Mode:
    text = str(mode or Mode.BENCHMARK.value).strip().lower()
    try:
        return Mode(text)
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        raise InvalidSubmission(
            f"Unknown mode {mode!r} for a batch; choose one of: {choices} (a compare takes two files: "
            "POST /api/v1/submissions with mode=compare).",
            code="unknown_mode",
            field="mode",
        ) from None


def _bounded(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error(exc: UserError) -> dict[str, Any]:
    return {"code": exc.code, "message": exc.message, "field": exc.field}
