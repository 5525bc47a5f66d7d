"""The one API every surface uses (Discord bot, CLI, web): submissions, rankings, tasks, admin, and the two
functions workers need (``run_requests`` and ``record_run``).

Blocking (SQLAlchemy sessions): async surfaces call it through ``asyncio.to_thread``. Every user mistake raises a
``leaderboards.errors.UserError`` whose message is meant to be shown as it is; answers are frozen dataclasses
from ``leaderboards.results``. Permissions (who is an admin) are the surfaces' checks; admin functions take the
acting user's name only for the audit log.

The class is assembled from parts: competitor functions here, admin functions in ``admin.py``, the workers'
functions in ``recording.py``, shared plumbing in ``service_base.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from leaderboards.admin import AdminMixin
from leaderboards.errors import (
    Banned,
    FileTooLarge,
    InvalidChange,
    InvalidSubmission,
    LeaderboardClosed,
    LeaderboardPaused,
    NotFound,
    PermissionDenied,
    RateLimited,
)
from leaderboards.models import (
    BestScore,
    Job,
    JobEvent,
    JobStatus,
    Leaderboard,
    RankChange,
    Run,
    Submission,
    SubmissionCode,
    User,
)
from leaderboards.problems import SUBMISSION_SUFFIXES, submission_language
from leaderboards.ranking import eligible_history
from leaderboards.recording import RecordingMixin, harness_device, secret_seed_for
from leaderboards.results import (
    JobReceipt,
    LeaderboardSummary,
    PublicResult,
    RankChangeView,
    Ranking,
    RankingEntry,
    SubmissionDetails,
    SubmissionReceipt,
    SubmissionStatus,
    SubmissionSummary,
    TaskView,
    TemplateFile,
    UserRef,
)
from leaderboards.service_base import ServiceBase
from leaderboards.snapshot import (
    template_file_name,
)
from runners.contract import Language, Mode, RunResult

__all__ = ["LeaderboardService", "UserRef", "harness_device", "secret_seed_for"]

MAX_FILE_NAME = 255
LANGUAGE_NAMES = {Language.PYTHON: "Python", Language.CUDA: "CUDA"}


def _parse_mode(mode: Mode | str) -> Mode:
    try:
        return Mode(mode)
    except ValueError:
        raise InvalidSubmission(f"Unknown mode {mode!r}; choose one of: {', '.join(m.value for m in Mode)}.") from None


class LeaderboardService(AdminMixin, RecordingMixin, ServiceBase):
    """The one API of the core. Build with an open ``Database`` (``leaderboards.db.open_database``) and settings.

    Competitor functions are here; admin functions come from ``AdminMixin`` (``admin.py``) and the workers'
    functions from ``RecordingMixin`` (``recording.py``).
    """

    def submit(
        self,
        user: UserRef,
        file_name: str,
        content: bytes,
        leaderboard: str,
        devices: Sequence[str] | None = None,
        mode: Mode | str = Mode.RANKED,
        *,
        force: bool = False,
    ) -> SubmissionReceipt:
        """Check a submission and queue one job per device; raise a ``UserError`` saying what to fix.

        The same file from the same user to the same leaderboard, mode and devices within
        ``duplicate_window_s`` is not run again: the earlier submission's receipt comes back with ``duplicate``
        set (``force`` runs it anyway). The user's row is locked first, so that concurrent submissions of one user
        are checked against the rate limits and caps one after the other, never side by side.
        """
        mode = _parse_mode(mode)
        now = self.clock()
        with self.db.transaction() as s:
            u = self._user(s, user)
            # FOR NO KEY UPDATE: serialises this user's submits, yet lets foreign-key checks (KEY SHARE) of runs and
            # rankings being stored for the user pass, so the two cannot deadlock. SQLite: BEGIN IMMEDIATE does it.
            s.execute(select(User.id).where(User.id == u.id).with_for_update(key_share=True))
            if u.is_banned:
                raise Banned(u.ban_reason)
            lb = self._leaderboard(s, leaderboard, include_hidden=False)
            if now >= lb.deadline:
                raise LeaderboardClosed(lb.name, lb.deadline)
            if lb.paused:
                raise LeaderboardPaused(lb.name)
            chosen = self._check_devices(lb, devices)
            name = self._check_file(lb, file_name, content)
            digest = hashlib.sha256(content).hexdigest()
            if not force:
                earlier = self._duplicate(s, u, lb, digest, mode, chosen, now)
                if earlier is not None:
                    return self._receipt(s, earlier, duplicate=True)
            self._check_rate(s, u, lb, mode, now)
            self._check_pending(s, u, len(chosen))
            self._check_new_files(s, u, digest, now)
            code = self._store_code(s, content)
            sub = Submission(
                user_id=u.id, leaderboard_id=lb.id, code_id=code.id, file_name=name, mode=mode.value, created_at=now
            )
            s.add(sub)
            s.flush()
            jobs = [
                Job(
                    submission_id=sub.id,
                    device=d,
                    status=JobStatus.QUEUED.value,
                    attempts=0,
                    max_attempts=self.settings.max_attempts,
                    created_at=now,
                )
                for d in chosen
            ]
            s.add_all(jobs)
            s.flush()
            s.add_all(JobEvent(job_id=j.id, phase="queued", detail="", created_at=now) for j in jobs)
            return self._receipt(s, sub, jobs=jobs)

    def _receipt(
        self, s: Session, sub: Submission, *, jobs: Sequence[Job] | None = None, duplicate: bool = False
    ) -> SubmissionReceipt:
        jobs = list(jobs) if jobs is not None else list(s.scalars(select(Job).where(Job.submission_id == sub.id)))
        return SubmissionReceipt(
            submission_id=sub.id,
            leaderboard=sub.leaderboard.name,
            user_name=sub.user.name,
            file_name=sub.file_name,
            mode=sub.mode,
            created_at=sub.created_at,
            jobs=tuple(
                JobReceipt(j.id, j.device, self._queue_position(s, j)) for j in sorted(jobs, key=lambda j: j.id)
            ),
            duplicate=duplicate,
        )

    def _duplicate(
        self, s: Session, u: User, lb: Leaderboard, digest: str, mode: Mode, devices: Sequence[str], now: datetime
    ) -> Submission | None:
        """The user's latest submission of this very file to ``lb`` in ``mode`` on ``devices`` within the duplicate
        window, if none of its jobs failed or was cancelled (those deserve a new run)."""
        window = self.settings.duplicate_window_s
        if not window:
            return None
        sub = s.scalar(
            select(Submission)
            .join(SubmissionCode, SubmissionCode.id == Submission.code_id)
            .where(
                Submission.user_id == u.id,
                Submission.leaderboard_id == lb.id,
                Submission.mode == mode.value,
                Submission.deleted.is_(False),
                Submission.created_at > now - timedelta(seconds=window),
                SubmissionCode.sha256 == digest,
            )
            .order_by(Submission.id.desc())
            .limit(1)
        )
        if sub is None:
            return None
        jobs = s.scalars(select(Job).where(Job.submission_id == sub.id)).all()
        usable = (JobStatus.QUEUED.value, JobStatus.RUNNING.value, JobStatus.SUCCEEDED.value)
        if sorted(j.device for j in jobs) != sorted(devices) or any(j.status not in usable for j in jobs):
            return None
        return sub

    def _check_file(self, lb: Leaderboard, file_name: str, content: bytes) -> str:
        name = file_name.replace("\\", "/").rsplit("/", 1)[-1].strip()
        if not name or name.startswith(".") or len(name) > MAX_FILE_NAME:
            raise InvalidSubmission(f"{file_name!r} is not a usable file name; name it like 'submission.py'.")
        lang = Language(lb.lang)
        suffixes = SUBMISSION_SUFFIXES[lang]
        if submission_language(name) is not lang:
            raise InvalidSubmission(
                f"Leaderboard {lb.name!r} takes {LANGUAGE_NAMES[lang]} files ({', '.join(suffixes)}); "
                f"{name!r} is not one."
            )
        limit = self.settings.max_submission_bytes
        if len(content) > limit:
            raise FileTooLarge(name, len(content), limit)
        if not content.strip():
            raise InvalidSubmission(f"{name} is empty.")
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidSubmission(f"{name} is not UTF-8 text (byte {exc.start} is not valid).") from None
        return name

    def _check_rate(self, s: Session, u: User, lb: Leaderboard, mode: Mode, now: datetime) -> None:
        """At most N submissions per hour per user and leaderboard: the leaderboard's own limit (every mode counts),
        else the default for ranked submissions (lower) or for the other modes."""
        if lb.rate_limit_per_hour:
            limit, modes, what = lb.rate_limit_per_hour, None, "times"
        elif mode is Mode.RANKED:
            limit, modes, what = self.settings.ranked_rate_limit_per_hour, [Mode.RANKED.value], "ranked submissions"
        else:
            others = [m.value for m in Mode if m is not Mode.RANKED]
            limit, modes, what = self.settings.rate_limit_per_hour, others, "test, benchmark or profile runs"
        if not limit:
            return
        window = now - timedelta(hours=1)
        conds = [Submission.leaderboard_id == lb.id, Submission.user_id == u.id, Submission.created_at > window]
        if modes is not None:
            conds.append(Submission.mode.in_(modes))
        recent = s.scalars(
            select(Submission.created_at).where(*conds).order_by(Submission.created_at.desc()).limit(limit)
        ).all()
        if len(recent) >= limit:
            retry_at = recent[-1] + timedelta(hours=1)
            raise RateLimited(
                f"You can send {limit} {what} per hour to {lb.name!r}; try again after {retry_at:%H:%M:%S} UTC.",
                retry_at,
            )

    def _check_new_files(self, s: Session, u: User, digest: str, now: datetime) -> None:
        """At most N different files stored per user in 24 hours (resubmitting one of them is always fine)."""
        cap = self.settings.max_new_files_per_day
        if not cap:
            return
        since = now - timedelta(days=1)
        rows = s.execute(
            select(SubmissionCode.sha256, func.min(Submission.created_at))
            .join(Submission, Submission.code_id == SubmissionCode.id)
            .where(Submission.user_id == u.id, Submission.created_at > since)
            .group_by(SubmissionCode.sha256)
        ).all()
        if digest in {sha for sha, _ in rows} or len(rows) < cap:
            return
        retry_at = min(first for _, first in rows) + timedelta(days=1)
        raise RateLimited(
            f"You sent {len(rows)} different files in the last 24 hours, the most allowed; resubmit one of them, or "
            f"send a new one after {retry_at:%Y-%m-%d %H:%M} UTC.",
            retry_at,
        )

    def _check_pending(self, s: Session, u: User, new_jobs: int) -> None:
        pending = s.scalar(
            select(func.count())
            .select_from(Job)
            .join(Submission, Submission.id == Job.submission_id)
            .where(Submission.user_id == u.id, Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)))
        )
        cap = self.settings.max_pending_jobs_per_user
        if int(pending or 0) + new_jobs > cap:
            raise RateLimited(
                f"You have {pending} runs waiting or running (at most {cap}); wait for some to finish.",
                self.clock() + timedelta(minutes=1),
            )

    def _store_code(self, s: Session, content: bytes) -> SubmissionCode:
        digest = hashlib.sha256(content).hexdigest()
        code = s.scalar(select(SubmissionCode).where(SubmissionCode.sha256 == digest))
        if code is not None:
            return code
        try:
            with s.begin_nested():
                code = SubmissionCode(sha256=digest, content=content)
                s.add(code)
        except IntegrityError:  # stored by a concurrent submission of the same file
            code = s.scalar(select(SubmissionCode).where(SubmissionCode.sha256 == digest))
            if code is None:
                raise
        return code

    def submission_status(self, submission_id: int) -> SubmissionStatus:
        """Where a submission is: each job's status, queue position, latest events, verdict and score."""
        with self.db.transaction() as s:
            return self._status(s, self._submission(s, submission_id))

    def cancel(self, submission_id: int, user: UserRef) -> SubmissionStatus:
        """Cancel the owner's unfinished jobs of a submission (a running job's result is then discarded)."""
        now = self.clock()
        with self.db.transaction() as s:
            sub = self._submission(s, submission_id)
            if sub.user.identity != user.identity:
                raise PermissionDenied(f"Submission #{submission_id} is not yours; only its author can cancel it.")
            jobs = s.scalars(
                select(Job)
                .where(
                    Job.submission_id == sub.id,
                    Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)),
                )
                .with_for_update()
            ).all()
            if not jobs:
                raise InvalidChange(f"Submission #{submission_id} has already finished; there is nothing to cancel.")
            for job in jobs:
                job.status = JobStatus.CANCELLED.value
                job.error = "cancelled by its author"
                job.finished_at = now
                job.lease_owner = None
                job.lease_expires_at = None
                s.add(JobEvent(job_id=job.id, phase="cancelled", detail="cancelled by its author", created_at=now))
            s.flush()
            return self._status(s, sub)

    def list_leaderboards(self, *, include_hidden: bool = False) -> tuple[LeaderboardSummary, ...]:
        with self.db.transaction() as s:
            counts = dict(
                s.execute(
                    select(Submission.leaderboard_id, func.count())
                    .where(Submission.deleted.is_(False))
                    .group_by(Submission.leaderboard_id)
                ).all()
            )
            # The task snapshot (deferred) is never loaded for a list: everything a list shows has its own column.
            stmt = select(Leaderboard).order_by(Leaderboard.name)
            if not include_hidden:
                stmt = stmt.where(Leaderboard.visible.is_(True))
            return tuple(self._summary(lb, int(counts.get(lb.id, 0))) for lb in s.scalars(stmt))

    def leaderboard(self, name: str, *, include_hidden: bool = False) -> LeaderboardSummary:
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=include_hidden)
            count = s.scalar(
                select(func.count())
                .select_from(Submission)
                .where(Submission.leaderboard_id == lb.id, Submission.deleted.is_(False))
            )
            return self._summary(lb, int(count or 0))

    def score_history(self, leaderboard: str, device: str | None = None) -> tuple[tuple[datetime, float], ...]:
        """Every eligible ranked score on one device, oldest first (banned users and deleted submissions left
        out): the data of a "best score over time" chart."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False)
            (dev,) = self._check_devices(lb, [device] if device else None)
            return tuple(eligible_history(s, lb, dev))

    def ranking(self, leaderboard: str, device: str | None = None, limit: int | None = 100) -> Ranking:
        """The best eligible ranked submission per user on one device, best first (ties: earlier submission).

        ``device`` may be omitted when the leaderboard has only one.
        """
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False)
            (dev,) = self._check_devices(lb, [device] if device else None)
            here = (BestScore.leaderboard_id == lb.id, BestScore.device == dev)
            # How many are ranked, in the same round trip: all rows here (an index-only count) minus banned users'
            # rows (few, found through the partial index on banned users).
            total = (
                select(func.count()).select_from(BestScore).where(*here).scalar_subquery()
                - select(func.count())
                .select_from(BestScore)
                .join(User, User.id == BestScore.user_id)
                .where(*here, User.is_banned.is_(True))
                .scalar_subquery()
            )
            stmt = (
                select(
                    BestScore.user_id,
                    User.name,
                    BestScore.submission_id,
                    Submission.file_name,
                    BestScore.score,
                    BestScore.submitted_at,
                    total.label("total"),
                )
                .join(User, User.id == BestScore.user_id)
                .join(Submission, Submission.id == BestScore.submission_id)
                .where(*here, User.is_banned.is_(False))
                .order_by(BestScore.score, BestScore.submitted_at, BestScore.submission_id)
                .limit(limit)
            )
            rows = s.execute(stmt).all()
            entries = tuple(RankingEntry(i, *row[:6]) for i, row in enumerate(rows, start=1))
            count = int(rows[0].total) if rows else 0 if limit != 0 else int(s.scalar(select(total)) or 0)
            return Ranking(leaderboard=lb.name, device=dev, ranking_by=lb.ranking_by, entries=entries, total=count)

    def user_submissions(
        self, user: UserRef, leaderboard: str | None = None, *, limit: int = 50
    ) -> tuple[SubmissionSummary, ...]:
        """A user's own submissions, newest first (deleted ones left out)."""
        with self.db.transaction() as s:
            u = s.scalar(select(User).where(User.identity == user.identity))
            if u is None:
                return ()
            stmt = select(Submission).where(Submission.user_id == u.id, Submission.deleted.is_(False))
            if leaderboard is not None:
                stmt = stmt.where(Submission.leaderboard_id == self._leaderboard(s, leaderboard).id)
            subs = s.scalars(stmt.order_by(Submission.id.desc()).limit(limit)).all()
            return tuple(
                SubmissionSummary(
                    submission_id=sub.id,
                    leaderboard=sub.leaderboard.name,
                    file_name=sub.file_name,
                    mode=sub.mode,
                    created_at=sub.created_at,
                    jobs=self._status(s, sub, events=False).jobs,
                )
                for sub in subs
            )

    def submission_details(self, submission_id: int, user: UserRef) -> SubmissionDetails:
        """The owner's view of a submission: code and public results. Secret runs are never shown."""
        with self.db.transaction() as s:
            sub = self._submission(s, submission_id)
            if sub.user.identity != user.identity or sub.deleted:
                raise PermissionDenied(f"Submission #{submission_id} is not yours; only its author can see it.")
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

    def task(self, name: str) -> TaskView:
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=False)
            snap = lb.task
            task = snap["task"]
            return TaskView(
                name=lb.name,
                description=lb.description,
                lang=lb.lang,
                devices=tuple(lb.devices),
                deadline=lb.deadline,
                ranking_by=lb.ranking_by,
                files=dict(snap["files"]),
                templates=dict(snap.get("templates", {})),
                template_files={label: template_file_name(snap, label) for label in snap.get("templates", {})},
                tests=tuple(task["tests"]),
                benchmarks=tuple(task["benchmarks"]),
            )

    def template(self, name: str, language: str) -> TemplateFile:
        view = self.task(name)
        if language not in view.templates:
            offered = ", ".join(sorted(view.templates)) or "none"
            raise NotFound(f"Leaderboard {name!r} has no {language!r} template; it offers: {offered}.")
        return TemplateFile(view.name, language, view.template_files[language], view.templates[language])

    # -- announcements ---------------------------------------------------------------------------------------

    def claim_announcements(self, claimer: str, *, limit: int = 20) -> tuple[RankChangeView, ...]:
        """Hand out rank changes not announced yet and mark them announced, in one transaction.

        Each change is handed out once across processes and restarts (at most once: a claimer that crashes
        after claiming loses that announcement rather than repeating it).
        """
        now = self.clock()
        with self.db.transaction() as s:
            ids = s.scalars(
                select(RankChange.id)
                .where(RankChange.announced_at.is_(None))
                .order_by(RankChange.id)
                .limit(limit)
                .with_for_update(skip_locked=True)
            ).all()
            if not ids:
                return ()
            claimed = (
                s.execute(
                    update(RankChange)
                    .where(RankChange.id.in_(ids), RankChange.announced_at.is_(None))
                    .values(announced_at=now, announced_by=claimer)
                    .returning(RankChange.id)
                )
                .scalars()
                .all()
            )
            rows = s.execute(
                select(RankChange, Leaderboard.name, User)
                .join(Leaderboard, Leaderboard.id == RankChange.leaderboard_id)
                .join(User, User.id == RankChange.user_id)
                .where(RankChange.id.in_(claimed))
                .order_by(RankChange.id)
            ).all()
            return tuple(
                RankChangeView(
                    change_id=c.id,
                    leaderboard=lb_name,
                    device=c.device,
                    user_id=u.id,
                    user_name=u.name,
                    user_discord_id=u.discord_id,
                    submission_id=c.submission_id,
                    old_rank=c.old_rank,
                    new_rank=c.new_rank,
                    score_ns=c.score,
                    previous_score_ns=c.previous_score,
                    created_at=c.created_at,
                )
                for c, lb_name, u in rows
            )
