"""The one API every surface uses (Discord bot, CLI, web): submissions, rankings, tasks, admin, and the two
functions workers need (``run_requests`` and ``record_run``).

Blocking (SQLAlchemy sessions): async surfaces call it through ``asyncio.to_thread``. Every user mistake raises a
``leaderboards.errors.UserError`` whose message is meant to be shown as it is; answers are frozen dataclasses
from ``leaderboards.results``. Permissions (who is an admin) are the surfaces' checks; admin functions here take
the acting user's name only for the audit log.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, undefer

from leaderboards import ranking
from leaderboards.db import Database
from leaderboards.errors import (
    AlreadyExists,
    Banned,
    DeviceNotAllowed,
    InvalidChange,
    InvalidSubmission,
    LeaderboardClosed,
    LeaderboardNotFound,
    LeaderboardPaused,
    LeaseLost,
    NeedsForce,
    NotFound,
    PermissionDenied,
    RateLimited,
    SubmissionNotFound,
    UserNotFound,
)
from leaderboards.models import (
    AuditLog,
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
    Worker,
    utcnow,
)
from leaderboards.problems import SUBMISSION_SUFFIXES, Problem, submission_language
from leaderboards.results import (
    JobEventView,
    JobReceipt,
    JobView,
    LeaderboardSummary,
    LeaderboardUpdate,
    PlannedRun,
    PublicResult,
    QueueStats,
    RankChangeView,
    Ranking,
    RankingEntry,
    RecordedRun,
    SubmissionDetails,
    SubmissionReceipt,
    SubmissionStatus,
    SubmissionSummary,
    TaskView,
    TemplateFile,
    UsageStats,
    UserRef,
    UserView,
    WorkerView,
)
from leaderboards.scoring import run_score
from leaderboards.settings import CoreSettings
from leaderboards.snapshot import (
    fingerprint,
    incomparable_changes,
    problem_from_snapshot,
    snapshot,
    template_file_name,
)
from runners.contract import Language, Limits, Mode, RankingRule, RunResult, Verdict, worst

__all__ = ["LeaderboardService", "UserRef", "harness_device", "secret_seed_for"]

EVENTS_PER_JOB = 20
"""Latest progress events returned with each job's status."""
WORKER_ALIVE_S = 60.0
"""A worker whose heartbeat is older than this is not counted as alive."""
MAX_FILE_NAME = 255
LANGUAGE_NAMES = {Language.PYTHON: "Python", Language.CUDA: "CUDA"}


def harness_device(device: str) -> str:
    """What the harness runs kernels on for a leaderboard device name: 'cpu' for cpu, else 'cuda'."""
    return "cpu" if device.lower() == "cpu" else "cuda"


def secret_seed_for(secret_seed: int, submission_id: int, device: str) -> int:
    """The seed of a submission's secret run: fresh per submission and device, underivable without the secret."""
    digest = hashlib.sha256(f"{secret_seed}:{submission_id}:{device}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _parse_mode(mode: Mode | str) -> Mode:
    try:
        return Mode(mode)
    except ValueError:
        raise InvalidSubmission(f"Unknown mode {mode!r}; choose one of: {', '.join(m.value for m in Mode)}.") from None


class LeaderboardService:
    """Build with an open ``Database`` (``leaderboards.db.open_database``) and the core settings."""

    def __init__(
        self, db: Database, settings: CoreSettings | None = None, *, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.db = db
        self.settings = settings or CoreSettings()
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

    def _leaderboard(self, s: Session, name: str, *, lock: bool = False, include_hidden: bool = True) -> Leaderboard:
        stmt = select(Leaderboard).where(Leaderboard.name == name)
        if lock:
            stmt = stmt.with_for_update()
        lb = s.scalar(stmt)
        if lb is None or (not include_hidden and not lb.visible):
            known = s.scalars(select(Leaderboard.name).where(Leaderboard.visible.is_(True))).all()
            raise LeaderboardNotFound(name, list(known))
        return lb

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
            problem=str(lb.task.get("problem", "")),
        )

    def _queue_position(self, s: Session, job: Job) -> int | None:
        if job.status != JobStatus.QUEUED:
            return None
        ahead = s.scalar(
            select(func.count())
            .select_from(Job)
            .where(Job.status == JobStatus.QUEUED.value, Job.device == job.device, Job.id < job.id)
        )
        return int(ahead or 0) + 1

    def _job_view(self, s: Session, job: Job, *, events: bool = True) -> JobView:
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
            status=job.status,
            verdict=job.verdict,
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            error=job.error,
            queue_position=self._queue_position(s, job),
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            score_ns=public.score if public is not None else None,
            public_passed=public.passed if public is not None else None,
            secret_passed=secret.passed if secret is not None else None,
            rank=rank,
            events=event_views,
        )

    def _status(self, s: Session, sub: Submission, *, events: bool = True) -> SubmissionStatus:
        jobs = s.scalars(select(Job).where(Job.submission_id == sub.id).order_by(Job.id)).all()
        return SubmissionStatus(
            submission_id=sub.id,
            leaderboard=sub.leaderboard.name,
            user_name=sub.user.name,
            file_name=sub.file_name,
            mode=sub.mode,
            created_at=sub.created_at,
            deleted=sub.deleted,
            jobs=tuple(self._job_view(s, j, events=events) for j in jobs),
        )

    # -- competitors -----------------------------------------------------------------------------------------

    def submit(
        self,
        user: UserRef,
        file_name: str,
        content: bytes,
        leaderboard: str,
        devices: Sequence[str] | None = None,
        mode: Mode | str = Mode.RANKED,
    ) -> SubmissionReceipt:
        """Check a submission and queue one job per device; raise a ``UserError`` saying what to fix."""
        mode = _parse_mode(mode)
        now = self.clock()
        with self.db.transaction() as s:
            u = self._user(s, user)
            if u.is_banned:
                raise Banned(u.ban_reason)
            lb = self._leaderboard(s, leaderboard, include_hidden=False)
            if now >= lb.deadline:
                raise LeaderboardClosed(lb.name, lb.deadline)
            if lb.paused:
                raise LeaderboardPaused(lb.name)
            chosen = self._check_devices(lb, devices)
            name = self._check_file(lb, file_name, content)
            self._check_rate(s, u, lb, now)
            self._check_pending(s, u, len(chosen))
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
            return SubmissionReceipt(
                submission_id=sub.id,
                leaderboard=lb.name,
                user_name=u.name,
                file_name=name,
                mode=mode.value,
                created_at=sub.created_at,
                jobs=tuple(JobReceipt(j.id, j.device, self._queue_position(s, j)) for j in jobs),
            )

    def _check_devices(self, lb: Leaderboard, devices: Sequence[str] | None) -> list[str]:
        allowed = list(lb.devices)
        if not devices:
            if len(allowed) == 1:
                return allowed
            raise DeviceNotAllowed(lb.name, "(none given)", allowed)
        by_lower = {d.lower(): d for d in allowed}
        chosen: list[str] = []
        for d in devices:
            canonical = by_lower.get(d.strip().lower())
            if canonical is None:
                raise DeviceNotAllowed(lb.name, d, allowed)
            if canonical not in chosen:
                chosen.append(canonical)
        return chosen

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
            raise InvalidSubmission(f"{name} is {len(content) / 1024:.0f} KiB; the limit is {limit / 1024:.0f} KiB.")
        if not content.strip():
            raise InvalidSubmission(f"{name} is empty.")
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidSubmission(f"{name} is not UTF-8 text (byte {exc.start} is not valid).") from None
        return name

    def _check_rate(self, s: Session, u: User, lb: Leaderboard, now: datetime) -> None:
        limit = lb.rate_limit_per_hour or self.settings.rate_limit_per_hour
        if not limit:
            return
        window = now - timedelta(hours=1)
        recent = s.scalars(
            select(Submission.created_at)
            .where(Submission.leaderboard_id == lb.id, Submission.user_id == u.id, Submission.created_at > window)
            .order_by(Submission.created_at.desc())
            .limit(limit)
        ).all()
        if len(recent) >= limit:
            retry_at = recent[-1] + timedelta(hours=1)
            raise RateLimited(
                f"You can submit {limit} times per hour to {lb.name!r}; try again after {retry_at:%H:%M:%S} UTC.",
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
            stmt = select(Leaderboard).options(undefer(Leaderboard.task)).order_by(Leaderboard.name)
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

    # -- admin -----------------------------------------------------------------------------------------------

    def create_leaderboard(
        self,
        problem: Problem,
        *,
        name: str | None = None,
        deadline: datetime,
        devices: Sequence[str],
        creator: str = "",
        description: str | None = None,
        visible: bool = True,
        rate_limit_per_hour: int | None = None,
        problem_set: str | None = None,
    ) -> LeaderboardSummary:
        name = name or problem.name
        self._check_admin_values(name, deadline, devices, rate_limit_per_hour)
        snap = snapshot(problem)
        with self.db.transaction() as s:
            if s.scalar(select(Leaderboard.id).where(Leaderboard.name == name)) is not None:
                raise AlreadyExists(f"A leaderboard named {name!r} already exists.")
            lb = Leaderboard(
                name=name,
                description=description if description is not None else problem.task.description,
                deadline=deadline.astimezone(UTC),
                task=snap,
                lang=problem.task.lang.value,
                devices=list(dict.fromkeys(devices)),
                ranking_by=problem.task.ranking_by.value,
                secret_seed=secrets.randbits(62),
                creator=creator,
                visible=visible,
                paused=False,
                rate_limit_per_hour=rate_limit_per_hour,
                fingerprint=fingerprint(snap),
                problem_set=problem_set,
            )
            s.add(lb)
            s.flush()
            self._audit(s, creator or "system", "create_leaderboard", name, fingerprint=lb.fingerprint)
            return self._summary(lb)

    def _check_admin_values(
        self, name: str, deadline: datetime | None, devices: Sequence[str] | None, rate: int | None
    ) -> None:
        if not name or len(name) > 100 or not name.replace("-", "").replace("_", "").isalnum():
            raise InvalidChange(f"{name!r} is not a usable leaderboard name (letters, digits, '-' and '_').")
        if deadline is not None and deadline.tzinfo is None:
            raise InvalidChange("The deadline needs a time zone (use UTC).")
        if devices is not None and (not devices or any(not d or len(d) > 32 for d in devices)):
            raise InvalidChange("A leaderboard needs at least one device name (at most 32 characters each).")
        if rate is not None and rate < 1:
            raise InvalidChange("A rate limit is a positive number of submissions per hour (or none).")

    def update_leaderboard(
        self,
        name: str,
        *,
        problem: Problem | None = None,
        deadline: datetime | None = None,
        devices: Sequence[str] | None = None,
        description: str | None = None,
        visible: bool | None = None,
        force: bool = False,
        actor: str = "",
    ) -> LeaderboardUpdate:
        """Change a leaderboard. A new problem whose reference, benchmarks, language or ranking rule differ needs
        ``force=True`` (raises ``NeedsForce`` naming why otherwise) and starts the ranking over."""
        self._check_admin_values(name, deadline, devices, None)
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            changed: list[str] = []
            reset = False
            if problem is not None:
                snap = snapshot(problem)
                reasons = incomparable_changes(lb.task, snap)
                if reasons and not force:
                    raise NeedsForce(name, reasons)
                if snap != lb.task:
                    changed.append("task")
                    if description is None and lb.description != problem.task.description:
                        description = problem.task.description
                    lb.task, lb.lang, lb.ranking_by = snap, problem.task.lang.value, problem.task.ranking_by.value
                if reasons:
                    lb.fingerprint = fingerprint(snap)
                    ranking.rebuild(s, lb)  # old runs no longer match the fingerprint: the ranking starts over
                    reset = True
            for attr, value in (
                ("deadline", deadline.astimezone(UTC) if deadline else None),
                ("devices", list(dict.fromkeys(devices)) if devices is not None else None),
                ("description", description),
                ("visible", visible),
            ):
                if value is not None and getattr(lb, attr) != value:
                    setattr(lb, attr, value)
                    changed.append(attr)
            if changed:
                lb.updated_at = self.clock()
                self._audit(s, actor or "system", "update_leaderboard", name, changed=changed, reset=reset)
            s.flush()
            return LeaderboardUpdate(self._summary(lb), tuple(changed), reset)

    def delete_leaderboard(self, name: str, *, actor: str = "") -> None:
        """Delete a leaderboard with all its submissions, jobs and runs."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            s.delete(lb)
            self._audit(s, actor or "system", "delete_leaderboard", name)

    def delete_submission(self, submission_id: int, *, actor: str = "", user: UserRef | None = None) -> None:
        """Remove a submission from every ranking (soft delete) and cancel its unfinished jobs.

        With ``user`` it is the author deleting their own; without, an admin (permission checked by the surface).
        """
        now = self.clock()
        with self.db.transaction() as s:
            sub = self._submission(s, submission_id)
            if user is not None and sub.user.identity != user.identity:
                raise PermissionDenied(f"Submission #{submission_id} is not yours; only its author can delete it.")
            if sub.deleted:
                raise SubmissionNotFound(submission_id)
            sub.deleted, sub.deleted_at = True, now
            s.execute(
                update(Job)
                .where(Job.submission_id == sub.id, Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)))
                .values(status=JobStatus.CANCELLED.value, error="submission deleted", finished_at=now, lease_owner=None)
            )
            s.flush()
            ranking.rebuild(s, sub.leaderboard, user_id=sub.user_id)
            self._audit(s, actor or (user.identity if user else "system"), "delete_submission", str(submission_id))

    def user(self, user: UserRef) -> UserView:
        with self.db.transaction() as s:
            return self._user_view(self._user(s, user, create=False))

    @staticmethod
    def _user_view(u: User) -> UserView:
        return UserView(u.id, u.name, u.identity, u.discord_id, u.is_banned, u.ban_reason)

    def ban_user(self, user: UserRef, *, reason: str = "", actor: str = "") -> UserView:
        """Refuse the user's submissions and hide them from every ranking (kept, so unbanning restores them)."""
        with self.db.transaction() as s:
            u = self._user(s, user)
            u.is_banned, u.ban_reason = True, reason or None
            self._audit(s, actor or "system", "ban", u.identity, reason=reason)
            s.flush()
            return self._user_view(u)

    def unban_user(self, user: UserRef, *, actor: str = "") -> UserView:
        with self.db.transaction() as s:
            u = self._user(s, user, create=False)
            u.is_banned, u.ban_reason = False, None
            self._audit(s, actor or "system", "unban", u.identity)
            s.flush()
            return self._user_view(u)

    def set_rate_limit(self, name: str, per_hour: int | None, *, actor: str = "") -> LeaderboardSummary:
        """Submissions per user per hour on this leaderboard; None falls back to KERNELCUP_RATE_LIMIT_PER_HOUR."""
        self._check_admin_values(name, None, None, per_hour)
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            lb.rate_limit_per_hour = per_hour
            self._audit(s, actor or "system", "set_rate_limit", name, per_hour=per_hour)
            s.flush()
            return self._summary(lb)

    def pause(self, name: str, *, actor: str = "") -> LeaderboardSummary:
        return self._set_paused(name, True, actor)

    def resume(self, name: str, *, actor: str = "") -> LeaderboardSummary:
        return self._set_paused(name, False, actor)

    def _set_paused(self, name: str, paused: bool, actor: str) -> LeaderboardSummary:
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            lb.paused = paused
            self._audit(s, actor or "system", "pause" if paused else "resume", name)
            s.flush()
            return self._summary(lb)

    def queue_stats(self) -> QueueStats:
        with self.db.transaction() as s:
            jobs: dict[str, dict[str, int]] = {}
            for device, status, n in s.execute(
                select(Job.device, Job.status, func.count()).group_by(Job.device, Job.status)
            ):
                jobs.setdefault(device, {})[status] = int(n)
            oldest = s.scalar(select(func.min(Job.created_at)).where(Job.status == JobStatus.QUEUED.value))
            alive_since = self.clock() - timedelta(seconds=WORKER_ALIVE_S)
            workers = s.scalars(
                select(Worker)
                .where(Worker.heartbeat_at >= alive_since, Worker.stopped_at.is_(None))
                .order_by(Worker.id)
            ).all()
            return QueueStats(
                jobs=jobs,
                oldest_queued_at=oldest.replace(tzinfo=UTC) if oldest is not None and oldest.tzinfo is None else oldest,
                workers=tuple(WorkerView(w.id, w.hostname, tuple(w.devices), w.heartbeat_at) for w in workers),
            )

    def usage_stats(self, since: datetime | None = None) -> UsageStats:
        with self.db.transaction() as s:
            sub_filter = [Submission.created_at >= since] if since else []
            by_lb = dict(
                s.execute(
                    select(Leaderboard.name, func.count(Submission.id))
                    .join(Submission, Submission.leaderboard_id == Leaderboard.id)
                    .where(*sub_filter)
                    .group_by(Leaderboard.name)
                ).all()
            )
            by_mode = dict(
                s.execute(select(Submission.mode, func.count()).where(*sub_filter).group_by(Submission.mode)).all()
            )
            users = s.scalar(select(func.count(func.distinct(Submission.user_id))).where(*sub_filter))
            run_rows = s.execute(
                select(Run.started_at, Run.finished_at).where(*([Run.created_at >= since] if since else []))
            ).all()
            seconds = sum((b - a).total_seconds() for a, b in run_rows if a is not None and b is not None)
            return UsageStats(
                since=since,
                submissions=sum(by_lb.values()),
                users=int(users or 0),
                by_leaderboard={k: int(v) for k, v in by_lb.items()},
                by_mode={k: int(v) for k, v in by_mode.items()},
                runs_seconds=seconds,
            )

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

    # -- workers ---------------------------------------------------------------------------------------------

    def run_requests(self, job_id: int, *, session: Session | None = None) -> tuple[PlannedRun, ...]:
        """The run request(s) of a job from the leaderboard's task snapshot: the public run, and for ranked jobs
        the secret-seed run too (``recorded`` marks those an earlier attempt already stored)."""
        with self._tx(session) as s:
            job = s.get(Job, job_id)
            if job is None:
                raise NotFound(f"There is no job {job_id}.")
            sub = job.submission
            lb = sub.leaderboard
            problem = problem_from_snapshot(lb.task)
            mode = Mode(sub.mode)
            done = set(s.scalars(select(Run.secret).where(Run.job_id == job.id)))
            limits = Limits(max_submission_bytes=self.settings.max_submission_bytes)
            kinds = [False, True] if mode is Mode.RANKED else [False]
            return tuple(
                PlannedRun(
                    job_id=job.id,
                    secret=secret,
                    request=problem.request(
                        sub.file_name,
                        sub.code.content,
                        mode,
                        device=harness_device(job.device),
                        device_name=job.device,
                        seed=secret_seed_for(lb.secret_seed, sub.id, job.device) if secret else None,
                        limits=limits,
                    ),
                    recorded=secret in done,
                )
                for secret in kinds
            )

    def record_run(
        self,
        job_id: int,
        result: RunResult,
        *,
        secret: bool = False,
        owner: str | None = None,
        session: Session | None = None,
    ) -> RecordedRun:
        """Store one run result with its score, and update the ranking and rank changes, in one transaction.

        With ``owner``, the job must still be running under that lease owner (checked on the locked job row),
        else ``LeaseLost`` is raised and nothing is stored. A job stores at most one result per kind (public,
        secret): a second call returns the first one with ``created=False``. Pass ``session`` to make this part
        of the caller's transaction (e.g. together with completing the job).
        """
        with self._tx(session) as s:
            job = s.scalar(select(Job).where(Job.id == job_id).with_for_update())
            if job is None:
                raise NotFound(f"There is no job {job_id}.")
            if owner is not None and (job.lease_owner != owner or job.status != JobStatus.RUNNING.value):
                raise LeaseLost(job_id, owner)
            runs = {r.secret: r for r in s.scalars(select(Run).where(Run.job_id == job.id))}
            existing = runs.get(secret)
            if existing is not None:
                return RecordedRun(
                    existing.id,
                    job.id,
                    job.submission_id,
                    job.device,
                    secret,
                    existing.passed,
                    existing.verdict,
                    None if secret else existing.score,
                    created=False,
                )
            sub = job.submission
            lb = sub.leaderboard
            score = run_score(result, RankingRule(lb.ranking_by))
            run = Run(
                job_id=job.id,
                submission_id=sub.id,
                device=job.device,
                mode=sub.mode,
                secret=secret,
                passed=result.passed,
                verdict=result.verdict.value,
                score=score,
                fingerprint=lb.fingerprint,
                result=result.model_dump(mode="json"),
                system=result.system.model_dump(mode="json"),
                started_at=result.started_at,
                finished_at=result.finished_at,
                created_at=self.clock(),
            )
            s.add(run)
            s.flush()
            runs[secret] = run
            job.verdict = worst([Verdict(r.verdict) for r in runs.values()]).value
            shown_score = None if secret else score  # a secret run's timings stay in the database
            recorded = RecordedRun(
                run.id, job.id, sub.id, job.device, secret, run.passed, run.verdict, shown_score, created=True
            )
            public, secret_run = runs.get(False), runs.get(True)
            if (
                sub.mode != Mode.RANKED.value
                or sub.deleted
                or public is None
                or secret_run is None
                or not (public.passed and secret_run.passed and public.score is not None)
                or public.fingerprint != lb.fingerprint
                or secret_run.fingerprint != lb.fingerprint
            ):
                return recorded
            assert public.score is not None
            best = ranking.offer(s, lb, sub, job.device, public.score, announce_top=self.settings.announce_top)
            change = None
            if best.change is not None:
                c = best.change
                change = RankChangeView(
                    c.id,
                    lb.name,
                    c.device,
                    sub.user_id,
                    sub.user.name,
                    sub.user.discord_id,
                    sub.id,
                    c.old_rank,
                    c.new_rank,
                    c.score,
                    c.previous_score,
                    c.created_at,
                )
            return replace(
                recorded, eligible=True, rank=best.rank, personal_best=best.personal_best, rank_change=change
            )

    def rebuild_rankings(self, name: str) -> int:
        """Recompute a leaderboard's ranking from its runs (repairs; also what the tests compare against)."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            ranking.rebuild(s, lb)
            return int(
                s.scalar(select(func.count()).select_from(BestScore).where(BestScore.leaderboard_id == lb.id)) or 0
            )
