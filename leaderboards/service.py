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
import unicodedata
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from leaderboards.accounts import AccountsMixin
from leaderboards.admin import AdminMixin
from leaderboards.directives import parse_directives
from leaderboards.errors import (
    Banned,
    FileTooLarge,
    InvalidChange,
    InvalidSubmission,
    LeaderboardClosed,
    LeaderboardPaused,
    NotFound,
    RateLimited,
    SubmissionNotFound,
)
from leaderboards.events import queue_positions
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
from leaderboards.ranking import eligible_history
from leaderboards.recording import RecordingMixin, harness_device, secret_seed_for
from leaderboards.results import (
    JobReceipt,
    LeaderboardSummary,
    RankChangeView,
    Ranking,
    RankingEntry,
    SubmissionReceipt,
    SubmissionStatus,
    SubmissionSummary,
    TaskView,
    TemplateFile,
    UserRef,
)
from leaderboards.scoring import roofline_score
from leaderboards.service_base import ServiceBase
from leaderboards.snapshot import (
    template_file_name,
)
from leaderboards.stats import StatsMixin
from leaderboards.viewing import ViewingMixin
from runners.contract import LANGUAGES, Language, Mode, RankingRule

__all__ = ["LeaderboardService", "UserRef", "harness_device", "secret_seed_for"]

MAX_FILE_NAME = 255


def _base_name(file_name: str) -> str:
    """The last part of a path a client sent (``../x/a.py`` -> ``a.py``), stripped: never a path."""
    return file_name.replace("\\", "/").rsplit("/", 1)[-1].strip()


def _parse_mode(mode: Mode | str) -> Mode:
    try:
        return Mode(str(mode).strip().lower())
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        raise InvalidSubmission(
            f"Unknown mode {mode!r}; choose one of: {choices}.", code="unknown_mode", field="mode"
        ) from None


ALL_DEVICES = "all"
"""A device list of just this word means every device of the leaderboard."""


def language_text(lang: str) -> str:
    """A leaderboard's language in words with the files it takes, for every surface."""
    info = next((i for key, i in LANGUAGES.items() if key.value == lang), None)
    return f"{info.display}: {', '.join(info.suffixes)} files" if info else lang


class LeaderboardService(ViewingMixin, AccountsMixin, AdminMixin, StatsMixin, RecordingMixin, ServiceBase):
    """The one API of the core. Build with an open ``Database`` (``leaderboards.db.open_database``) and settings.

    Competitor functions are here; the parts: what a submission's viewers may see (``ViewingMixin``,
    ``viewing.py``), accounts and API tokens (``AccountsMixin``, ``accounts.py``), admin functions (``AdminMixin``,
    ``admin.py``), readiness and job times (``StatsMixin``, ``stats.py``), the workers' functions
    (``RecordingMixin``, ``recording.py``).
    """

    def submit(
        self,
        user: UserRef,
        file_name: str,
        content: bytes,
        leaderboard: str | None = None,
        devices: Sequence[str] | None = None,
        mode: Mode | str | None = None,
        *,
        force: bool = False,
    ) -> SubmissionReceipt:
        """Check a submission and queue one job per device; raise a ``UserError`` saying what to fix.

        ``leaderboard``, ``devices`` and ``mode`` that are not given come from the file's header directives
        (``leaderboards.directives``); ``mode`` defaults to ranked, ``devices`` to the leaderboard's only device.
        ``devices=["all"]`` is every device of the leaderboard.

        The same file from the same user to the same leaderboard, mode and devices within
        ``duplicate_window_s`` is not run again: the earlier submission's receipt comes back with ``duplicate``
        set (``force`` runs it anyway). The user's row is locked first, so that concurrent submissions of one user
        are checked against the rate limits and caps one after the other, never side by side.
        """
        now = self.clock()
        name = self._check_content(file_name, content)
        header = parse_directives(content.decode("utf-8"))
        leaderboard = leaderboard or header.leaderboard
        if not leaderboard:
            raise InvalidSubmission(
                "Name the leaderboard: pass it (e.g. --leaderboard NAME), or put a line "
                "'#!kernelcup leaderboard NAME' at the top of the file.",
                code="no_leaderboard",
                field="leaderboard",
            )
        mode = _parse_mode(mode or header.mode or Mode.RANKED)
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
            wanted = [d for d in (devices or ()) if d.strip()] or list(header.devices)
            if [d.strip().lower() for d in wanted] == [ALL_DEVICES]:
                wanted = list(lb.devices)
            chosen = self._check_devices(lb, wanted)
            self._check_language(lb, name)
            digest = hashlib.sha256(content).hexdigest()
            if not force:
                earlier = self._duplicate(s, u, lb, digest, mode, chosen, now)
                if earlier is not None:
                    return self._receipt(s, earlier, duplicate=True)
            self._check_rate(s, u, lb, mode, now)
            self._check_pending(s, u, len(chosen))
            self._check_new_files(s, u, digest, now)
            sub = Submission(
                user_id=u.id,
                leaderboard_id=lb.id,
                code_id=self._store_code(s, content),
                file_name=name,
                mode=mode.value,
                created_at=now,
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
        jobs.sort(key=lambda j: j.id)
        positions = queue_positions(s, {j.id: (j.device, j.status) for j in jobs})
        return SubmissionReceipt(
            submission_id=sub.id,
            leaderboard=sub.leaderboard.name,
            user_name=sub.user.name,
            file_name=sub.file_name,
            mode=Mode(sub.mode),
            created_at=sub.created_at,
            jobs=tuple(JobReceipt(j.id, j.device, positions.get(j.id)) for j in jobs),
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

    def check_upload_size(self, file_name: str, size: int) -> None:
        """Refuse a file above ``KERNELCUP_MAX_SUBMISSION_BYTES`` (``FileTooLarge``): surfaces call this with the
        size an upload announces, before reading it, and ``submit`` again with the bytes it got."""
        limit = self.settings.max_submission_bytes
        if size > limit:
            raise FileTooLarge(_base_name(file_name) or "the file", size, limit)

    def _check_content(self, file_name: str, content: bytes) -> str:
        """The file's safe base name, after the checks that need no leaderboard: name, size, text."""
        name = _base_name(file_name)
        if (
            not name
            or name.startswith(".")
            or len(name) > MAX_FILE_NAME
            or any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name)
        ):
            raise InvalidSubmission(
                f"{file_name!r} is not a usable file name; name it like 'submission.py'.", code="bad_file_name"
            )
        self.check_upload_size(name, len(content))
        if not content.strip():
            raise InvalidSubmission(f"{name} is empty.", code="empty_file")
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidSubmission(
                f"{name} is not UTF-8 text (byte {exc.start} is not valid); submit the source file, not a binary.",
                code="binary_file",
            ) from None
        if "\x00" in text:
            raise InvalidSubmission(
                f"{name} contains NUL bytes; submit the source file, not a binary.", code="binary_file"
            )
        return name

    def _check_language(self, lb: Leaderboard, name: str) -> None:
        lang = LANGUAGES[Language(lb.lang)]
        if not lang.takes(name):
            raise InvalidSubmission(
                f"Leaderboard {lb.name!r} takes {lang.short} files ({', '.join(lang.suffixes)}); "
                f"{name!r} is not one.",
                code="wrong_file_type",
            )

    def _check_rate(self, s: Session, u: User, lb: Leaderboard, mode: Mode, now: datetime) -> None:
        """At most N submissions per hour per user and leaderboard: a program's own limit; else the leaderboard's
        own limit (every mode counts); else the default for ranked submissions (lower) or for the other modes."""
        if u.is_program:  # programs have their own limit, whatever the leaderboard allows people
            limit, modes, what = self.settings.program_rate_limit_per_hour, None, "times"
        elif lb.rate_limit_per_hour:
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
        cap = self.settings.program_max_pending_jobs if u.is_program else self.settings.max_pending_jobs_per_user
        if int(pending or 0) + new_jobs > cap:
            raise RateLimited(
                f"You have {pending} runs waiting or running (at most {cap}); wait for some to finish.",
                self.clock() + timedelta(minutes=1),
            )

    def _store_code(self, s: Session, content: bytes) -> int:
        """The id of the stored copy of ``content`` (files are stored once): a look-up, else one insert that a
        concurrent submission of the same file cannot make fail (``ON CONFLICT DO NOTHING``, no savepoint)."""
        digest = hashlib.sha256(content).hexdigest()
        by_digest = select(SubmissionCode.id).where(SubmissionCode.sha256 == digest)
        code_id = s.scalar(by_digest)
        if code_id is not None:
            return code_id
        insert = postgresql_insert if self.db.dialect == "postgresql" else sqlite_insert
        stmt = (
            insert(SubmissionCode)
            .values(sha256=digest, content=content, created_at=self.clock())
            .on_conflict_do_nothing(index_elements=["sha256"])
            .returning(SubmissionCode.id)
        )
        code_id = s.scalar(stmt)
        return code_id if code_id is not None else s.execute(by_digest).scalar_one()  # stored meanwhile, concurrently

    def submission_status(self, submission_id: int) -> SubmissionStatus:
        """Where a submission is: each job's status, queue position, latest events, verdict and score."""
        with self.db.transaction() as s:
            return self._status(s, self._submission(s, submission_id))

    def cancel(self, submission_id: int, user: UserRef) -> SubmissionStatus:
        """Cancel the owner's unfinished jobs of a submission (a running job's result is then discarded)."""
        now = self.clock()
        with self.db.transaction() as s:
            sub = self._submission(s, submission_id)
            if sub.user.identity != user.identity or sub.deleted:
                raise SubmissionNotFound(submission_id, mine=True)
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

    def roofline_score_ns(self, leaderboard: str, device: str | None = None) -> float | None:
        """The score a kernel at the device's roofline bound would get (ns): the ranking rule over the roofline bounds
        the runner computed for the public run of the best ranked entry on the device (the cases and the device are
        everyone's). A ranking score's share of the speed of light is this over the score (under the geometric
        mean: exactly the geometric mean of its benchmarks' shares). None while nobody is ranked, or where the run
        has no bounds (an unknown device, the CPU, a result stored before they were computed)."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False)
            (dev,) = self._check_devices(lb, [device] if device else None)
            best = (
                select(BestScore.submission_id)
                .where(BestScore.leaderboard_id == lb.id, BestScore.device == dev)
                .order_by(BestScore.score, BestScore.submitted_at, BestScore.submission_id)
                .limit(1)
                .scalar_subquery()
            )
            result = s.scalar(
                select(Run.result)
                .where(Run.submission_id == best, Run.device == dev, Run.secret.is_(False))
                .order_by(Run.id.desc())
                .limit(1)
            )
            bounds = [b.get("roofline_ns") for b in (result or {}).get("benchmarks", [])]
            return roofline_score(bounds, RankingRule(lb.ranking_by))

    def ranking(
        self,
        leaderboard: str,
        device: str | None = None,
        limit: int | None = 100,
        *,
        offset: int = 0,
        programs: bool | None = None,
    ) -> Ranking:
        """The best eligible ranked submission per user on one device, best first (ties: earlier submission).

        ``device`` may be omitted when the leaderboard has only one. ``programs`` says whether program accounts'
        entries count (default ``KERNELCUP_RANKINGS_SHOW_PROGRAMS``); ``offset``/``limit`` page through it.
        """
        programs = self.settings.rankings_show_programs if programs is None else programs
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False)
            (dev,) = self._check_devices(lb, [device] if device else None)
            here = (BestScore.leaderboard_id == lb.id, BestScore.device == dev)
            hidden = User.is_banned.is_(True) if programs else or_(User.is_banned.is_(True), User.is_program.is_(True))
            shown = (
                User.is_banned.is_(False) if programs else and_(User.is_banned.is_(False), User.is_program.is_(False))
            )
            # How many are ranked, in the same round trip: all rows here (an index-only count) minus hidden users'
            # rows (banned ones are few, found through their partial index; programs only when left out).
            total = (
                select(func.count()).select_from(BestScore).where(*here).scalar_subquery()
                - select(func.count())
                .select_from(BestScore)
                .join(User, User.id == BestScore.user_id)
                .where(*here, hidden)
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
                    User.is_program,
                    total.label("total"),
                )
                .join(User, User.id == BestScore.user_id)
                .join(Submission, Submission.id == BestScore.submission_id)
                .where(*here, shown)
                .order_by(BestScore.score, BestScore.submitted_at, BestScore.submission_id)
                .offset(offset or None)
                .limit(limit)
            )
            rows = s.execute(stmt).all()
            entries = tuple(RankingEntry(i, *row[:7]) for i, row in enumerate(rows, start=offset + 1))
            count = int(rows[0].total) if rows else int(s.scalar(select(total)) or 0)
            return Ranking(
                leaderboard=lb.name,
                device=dev,
                ranking_by=lb.ranking_by,
                entries=entries,
                total=count,
                programs=programs,
                offset=offset,
            )

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
                    mode=Mode(sub.mode),
                    created_at=sub.created_at,
                    jobs=self._status(s, sub, events=False).jobs,
                )
                for sub in subs
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
                dtype=str(task.get("dtype", "fp32")),  # (snapshots from before it was declared: the default)
                baselines=("reference", *(str(b.get("label", "")) for b in task.get("baselines", []))),
                language=language_text(lb.lang),
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
