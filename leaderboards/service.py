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

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from leaderboards.accounts import AccountsMixin
from leaderboards.admin import AdminMixin
from leaderboards.archive import ArchiveMixin
from leaderboards.audit import AuditMixin
from leaderboards.batches import BatchesMixin
from leaderboards.board_hacks import BoardHacksMixin
from leaderboards.budgets import BudgetsMixin
from leaderboards.competition import StandingsMixin
from leaderboards.db import lease_now
from leaderboards.directives import parse_directives
from leaderboards.errors import (
    AlreadyFinished,
    Banned,
    FileTooLarge,
    InvalidSubmission,
    LeaderboardPaused,
    NotFound,
    RateLimited,
    SubmissionNotFound,
)
from leaderboards.events import queue_positions
from leaderboards.idempotency import IdempotencyMixin
from leaderboards.invites import InvitesMixin
from leaderboards.late import LateMixin, late_notes
from leaderboards.models import (
    BestScore,
    BoardMember,
    Job,
    JobEvent,
    JobStatus,
    Leaderboard,
    RankChange,
    Run,
    Submission,
    SubmissionCode,
    SubmissionComparison,
    SubmissionOrigin,
    User,
)
from leaderboards.moderation import ModerationMixin
from leaderboards.moderation_states import author_text, ranks_condition
from leaderboards.public_problem import PublicFolder, public_folder, served_file_name, served_template
from leaderboards.recording import RecordingMixin, harness_device, secret_seed_for
from leaderboards.rejudge import RejudgeMixin, announcements_held
from leaderboards.replay import ReplayMixin
from leaderboards.results import (
    COMPARE_CPU_ROUNDS,
    COMPARE_DEFAULT_ROUNDS,
    COMPARE_MAX_ROUNDS,
    COMPARE_MIN_ROUNDS,
    JobReceipt,
    LeaderboardSummary,
    RankChangeView,
    Ranking,
    RankingEntry,
    SubmissionMode,
    SubmissionReceipt,
    SubmissionStatus,
    SubmissionSummary,
    TaskView,
    TemplateFile,
    UserRef,
)
from leaderboards.retiming import RetimingMixin
from leaderboards.scoring import roofline_score
from leaderboards.service_base import ServiceBase, check_file_language
from leaderboards.similarity_index import prepare as prepare_fingerprint
from leaderboards.snapshot import TaskSnapshot, template_file_name
from leaderboards.stats import StatsMixin
from leaderboards.viewing import ViewingMixin
from runners.contract import LANGUAGES, Mode, RankingRule

__all__ = ["LeaderboardService", "UserRef", "harness_device", "secret_seed_for"]

MAX_FILE_NAME = 255
HIDDEN_BOARD = "hidden board"
"""``RankChange.announced_by`` of a hidden leaderboard's change: handled without a post (``claim_announcements``)."""


def _base_name(file_name: str) -> str:
    """The last part of a path a client sent (``../x/a.py`` -> ``a.py``), stripped: never a path."""
    return file_name.replace("\\", "/").rsplit("/", 1)[-1].strip()


def _parse_mode(mode: Mode | str) -> Mode:
    text = str(mode).strip().lower()
    if text == SubmissionMode.COMPARE.value:
        raise InvalidSubmission(
            "Mode 'compare' takes two files and one device: send the second file too (the API's 'against' field, "
            "`kernelcup submit A.py B.py --compare`, or the Python client's compare()).",
            code="compare_needs_two_files",
            field="mode",
        )
    try:
        return Mode(text)
    except ValueError:
        choices = ", ".join(m.value for m in SubmissionMode)
        raise InvalidSubmission(
            f"Unknown mode {mode!r}; choose one of: {choices}.", code="unknown_mode", field="mode"
        ) from None


ALL_DEVICES = "all"
"""A device list of just this word means every device of the leaderboard."""


def language_text(lang: str) -> str:
    """A leaderboard's language in words with the files it takes, for every surface."""
    info = next((i for key, i in LANGUAGES.items() if key.value == lang), None)
    return f"{info.display}: {', '.join(info.suffixes)} files" if info else lang


class LeaderboardService(
    ViewingMixin,
    AccountsMixin,
    AdminMixin,
    AuditMixin,
    ModerationMixin,
    StatsMixin,
    RejudgeMixin,
    RetimingMixin,
    StandingsMixin,
    InvitesMixin,
    LateMixin,
    ArchiveMixin,
    BoardHacksMixin,
    BatchesMixin,
    BudgetsMixin,
    IdempotencyMixin,
    ReplayMixin,
    RecordingMixin,
    ServiceBase,
):
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
        licence: str | None = None,
        token_id: int | None = None,
    ) -> SubmissionReceipt:
        """Check a submission and queue one job per device; raise a ``UserError`` saying what to fix.

        ``leaderboard``, ``devices`` and ``mode`` that are not given come from the file's header directives
        (``leaderboards.directives``); ``mode`` defaults to ranked, ``devices`` to the leaderboard's only device.
        ``devices=["all"]`` is every device of the leaderboard.

        The same file from the same user to the same leaderboard, mode and devices within
        ``duplicate_window_s`` is not run again: the earlier submission's receipt comes back with ``duplicate``
        set (``force`` runs it anyway). The user's row is locked first, so that concurrent submissions of one user
        are checked against the rate limits and caps one after the other, never side by side. ``licence`` (else the
        file's ``license`` line, else the account's default) is the archive licence (``leaderboards/archive.py``).
        ``token_id``: the API token that sent it, whose GPU budget it spends (``leaderboards/budgets.py``).
        """
        now = self.clock()
        # The cheap checks of the file first (name, size, text), then those that cost a few reads (the board, a ban,
        # the devices, the limits, the budget), then the costly ones (compiling, fingerprinting, the screening
        # hook): a refused request costs the service little (red team, 2026-11-29).
        name = self._check_content(file_name, content, costly=False)
        header = parse_directives(content.decode("utf-8"))
        leaderboard = leaderboard or header.leaderboard
        if not leaderboard:
            raise InvalidSubmission(
                "Name the leaderboard: give it as `leaderboard` (on the command line, --leaderboard NAME), or put a "
                "line '#!kernelcup leaderboard NAME' at the top of the file.",
                code="no_leaderboard",
                field="leaderboard",
            )
        mode = _parse_mode(mode or header.mode or Mode.RANKED)
        wanted = [d for d in (devices or ()) if d.strip()] or list(header.devices)
        digest = hashlib.sha256(content).hexdigest()
        with self.db.transaction() as s:
            self._admit(s, user, leaderboard, wanted, mode, digest, name, force, token_id, now)
        self._check_costly(name, content)
        screening = self._screen(user, leaderboard, name, mode.value, content)  # before any lock: it may take seconds
        with self.db.transaction() as s:  # the same checks again, under the user's row lock: these decide
            admitted = self._admit(s, user, leaderboard, wanted, mode, digest, name, force, token_id, now)
            if isinstance(admitted, Submission):
                return self._receipt(s, admitted, duplicate=True)
            u, lb, chosen, late = admitted
            sub = self._store_submission(s, u, lb, name, content, mode, now, token_id, late, licence, header.licence)
            self._flag_screened(s, sub, screening)
            return self._receipt(s, sub, jobs=self._queue_jobs(s, sub, chosen, now))

    def _admit(
        self,
        s: Session,
        user: UserRef,
        leaderboard: str,
        wanted: Sequence[str],
        mode: Mode,
        digest: str,
        name: str,
        force: bool,
        token_id: int | None,
        now: datetime,
    ) -> Submission | tuple[User, Leaderboard, list[str], bool]:
        """A submission's checks that need the database but not its costly content checks: the board (and a ban), the
        devices, the file's language, a duplicate (answered by the earlier submission, which is returned), the
        hourly or practice limit, the budget, the pending quota and the daily new-file cap. Else the user, the
        board, the devices and whether it is late."""
        u, lb = self._open_board(s, user, leaderboard)
        if [d.strip().lower() for d in wanted] == [ALL_DEVICES]:
            wanted = list(lb.devices)
        chosen = self._check_devices(lb, wanted)
        self._check_language(lb, name)
        if not force:
            earlier = self._duplicate(s, u, lb, digest, mode, chosen, now)
            if earlier is not None:
                return earlier
        late = now >= lb.deadline  # practice: runs, ranks nowhere (leaderboards/late.py)
        if late:
            self._check_practice(s, u, lb, now)
        else:
            self._check_rate(s, u, lb, SubmissionMode(mode.value), now)
        self._check_budget(s, u.id, token_id, now)
        self._check_pending(s, u, len(chosen))
        self._check_new_files(s, u, [digest], now)
        return u, lb, chosen, late

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
    ) -> Submission:
        """Store a checked submission (not a compare) with its origin, licence and late mark; its jobs are the
        caller's."""
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
        self._note_origin(s, sub.id, token_id)
        self._store_licence(s, sub.id, self._licence_for_new(s, u, licence, header_licence))
        if late:
            self._mark_late(s, sub)
        return sub

    def compare(
        self,
        user: UserRef,
        file_a: str,
        content_a: bytes,
        file_b: str,
        content_b: bytes,
        leaderboard: str | None = None,
        device: str | None = None,
        rounds: int | None = None,
        *,
        token_id: int | None = None,
        profile: bool = False,
    ) -> SubmissionReceipt:
        """Queue a compare of two files on one device: at most ``rounds`` interleaved benchmark runs of each (A B,
        then B A, …; ``runners.compare``, which stops once the ratio is settled; None: 14 on a GPU, 6 on the CPU),
        answered with the ratio of their times and its 95% interval, per case and overall
        (``SubmissionStatus.comparison``). One job; the submission's mode is ``compare``, its file A.

        Never ranked and never de-duplicated: comparing a file with itself runs (it measures the noise). It counts
        as ``2 × rounds`` runs against the hourly limit and the pending-job quota of test, benchmark and profile
        runs. ``leaderboard`` and ``device`` not given come from A's header directives (else B's), the device else
        from the leaderboard's only one. ``profile``: after the rounds, each case of both files is profiled under
        Nsight Compute and the comparison carries their kernels' metric deltas (``runners.compare_profile``; a GPU
        device only).
        """
        now = self.clock()
        if rounds is not None and (
            isinstance(rounds, bool)
            or not isinstance(rounds, int)
            or not (COMPARE_MIN_ROUNDS <= rounds <= COMPARE_MAX_ROUNDS and rounds % 2 == 0)
        ):
            raise InvalidSubmission(
                f"A compare takes an even number of rounds from {COMPARE_MIN_ROUNDS} to {COMPARE_MAX_ROUNDS} (each "
                f"file runs first as often as second), not {rounds!r}; the default is {COMPARE_DEFAULT_ROUNDS} on a "
                f"GPU, {COMPARE_CPU_ROUNDS} on the CPU.",
                code="bad_rounds",
                field="rounds",
            )
        name_a = self._check_content(file_a, content_a, costly=False)
        name_b = self._check_content(file_b, content_b, field="against", costly=False)
        headers = [parse_directives(c.decode("utf-8")) for c in (content_a, content_b)]
        leaderboard = leaderboard or headers[0].leaderboard or headers[1].leaderboard
        if not leaderboard:
            raise InvalidSubmission(
                "Name the leaderboard to compare on: give it as `leaderboard` (on the command line, --leaderboard "
                "NAME), or put a line "
                "'#!kernelcup leaderboard NAME' at the top of the first file.",
                code="no_leaderboard",
                field="leaderboard",
            )
        wanted = [device] if device and device.strip() else list(headers[0].devices or headers[1].devices)
        digests = [hashlib.sha256(c).hexdigest() for c in (content_a, content_b)]
        with self.db.transaction() as s:  # the checks that cost a few reads first, as in ``submit``
            self._admit_compare(s, user, leaderboard, wanted, (name_a, name_b), rounds, profile, digests, token_id, now)
        self._check_costly(name_a, content_a)
        self._check_costly(name_b, content_b, field="against")
        # Both files run on the runners: each is screened as a submission is (it was not; red team, 2026-11-29).
        screenings = []
        for name, content, field in ((name_a, content_a, "file"), (name_b, content_b, "against")):
            try:
                screenings.append(self._screen(user, leaderboard, name, SubmissionMode.COMPARE.value, content))
            except InvalidSubmission as exc:
                exc.field = field  # which of the two files the hook refused
                raise
        with self.db.transaction() as s:
            u, lb, chosen, rounds, late = self._admit_compare(
                s, user, leaderboard, wanted, (name_a, name_b), rounds, profile, digests, token_id, now
            )
            sub = Submission(
                user_id=u.id,
                leaderboard_id=lb.id,
                code_id=self._store_code(s, content_a),
                file_name=name_a,
                mode=SubmissionMode.COMPARE.value,
                created_at=now,
            )
            s.add(sub)
            s.flush()
            self._note_origin(s, sub.id, token_id)
            for screening in screenings:
                self._flag_screened(s, sub, screening)
            if late:
                self._mark_late(s, sub)
            s.add(
                SubmissionComparison(
                    submission_id=sub.id,
                    code_b_id=self._store_code(s, content_b),
                    file_b_name=name_b,
                    rounds=rounds,
                    profile=profile,
                )
            )
            detail = f"compare: {rounds} rounds" + (", then kernel metrics" if profile else "")
            jobs = self._queue_jobs(s, sub, [chosen], now, detail=detail)
            return self._receipt(s, sub, jobs=jobs)

    def _admit_compare(
        self,
        s: Session,
        user: UserRef,
        leaderboard: str,
        wanted: list[str],
        names: tuple[str, str],
        rounds: int | None,
        profile: bool,
        digests: list[str],
        token_id: int | None,
        now: datetime,
    ) -> tuple[User, Leaderboard, str, int, bool]:
        """A compare's checks that need the database but not the files' costly content checks (their languages among
        them); the user, the board, the device, the rounds and whether it is late."""
        u, lb = self._open_board(s, user, leaderboard)
        several = len(wanted) > 1 or (not wanted and len(lb.devices) > 1)
        if several or [d.strip().lower() for d in wanted] == [ALL_DEVICES]:
            raise InvalidSubmission(
                f"A compare runs on one device (both files on the same machine); name one of "
                f"{', '.join(lb.devices)} as `device` (on the command line, --device {lb.devices[0]}).",
                code="one_device",
                field="devices",
            )
        (chosen,) = self._check_devices(lb, wanted)
        if profile and harness_device(chosen) == "cpu":
            raise InvalidSubmission(
                f"A compare with profile runs Nsight Compute, which profiles GPU kernels; {chosen} is a CPU. "
                "Compare on a GPU device, or leave profile out.",
                code="profile_needs_gpu",
                field="profile",
            )
        self._check_language(lb, names[0])
        self._check_language(lb, names[1])
        if rounds is None:
            rounds = COMPARE_CPU_ROUNDS if harness_device(chosen) == "cpu" else COMPARE_DEFAULT_ROUNDS
        # each round times both files; with profile, each benchmark case is then profiled once per file (Nsight
        # Compute runs, a session each), which the rate limit and the pending cap count as runs too
        profiled = 2 * len(TaskSnapshot.load(lb.task).task.benchmarks) if profile else 0
        cost = 2 * rounds + profiled
        late = now >= lb.deadline
        if late:
            self._check_practice(s, u, lb, now)
        else:
            self._check_rate(s, u, lb, SubmissionMode.COMPARE, now, cost=cost, profiled=profiled)
        self._check_budget(s, u.id, token_id, now)
        self._check_pending(s, u, cost, compare_rounds=rounds, profiled=profiled)
        self._check_new_files(s, u, digests, now)
        return u, lb, chosen, rounds, late

    @staticmethod
    def _note_origin(s: Session, submission_id: int, token_id: int | None, replay_of: int | None = None) -> None:
        """Remember the token that sent a submission (its GPU budget is spent by it) and the run it replays."""
        if token_id is not None or replay_of is not None:
            s.add(SubmissionOrigin(submission_id=submission_id, token_id=token_id, replay_of=replay_of))

    def _queue_jobs(
        self, s: Session, sub: Submission, devices: Sequence[str], now: datetime, detail: str = ""
    ) -> list[Job]:
        """One queued job per device for a stored submission, each with its ``queued`` event."""
        jobs = [
            Job(
                submission_id=sub.id,
                device=d,
                status=JobStatus.QUEUED.value,
                attempts=0,
                max_attempts=self.settings.max_attempts,
                created_at=now,
            )
            for d in devices
        ]
        s.add_all(jobs)
        s.flush()
        s.add_all(JobEvent(job_id=j.id, phase="queued", detail=detail, created_at=now) for j in jobs)
        return jobs

    def _open_board(self, s: Session, user: UserRef, leaderboard: str) -> tuple[User, Leaderboard]:
        """The user, locked (their submissions are checked one after the other), and the leaderboard, which must
        be visible (or joined with an invite code) and not paused; a banned user is refused. After the deadline the
        caller checks practice's own limit (``LateMixin._check_practice``)."""
        u = self._user(s, user)
        # FOR NO KEY UPDATE: serialises this user's submits, yet lets foreign-key checks (KEY SHARE) of runs and
        # rankings being stored for the user pass, so the two cannot deadlock. SQLite: BEGIN IMMEDIATE does it.
        s.execute(select(User.id).where(User.id == u.id).with_for_update(key_share=True))
        if u.is_banned:
            raise Banned(u.ban_reason)
        lb = self._leaderboard(s, leaderboard, include_hidden=False, viewer=user)
        if lb.paused:
            raise LeaderboardPaused(lb.name)
        return u, lb

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
            mode=SubmissionMode(sub.mode),
            created_at=sub.created_at,
            jobs=tuple(JobReceipt(j.id, j.device, positions.get(j.id)) for j in jobs),
            duplicate=duplicate,
            visible=sub.leaderboard.visible,
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

    def _check_content(self, file_name: str, content: bytes, *, field: str = "file", costly: bool = True) -> str:
        """The file's safe base name, after the checks that need no leaderboard: name, size, text, and (``costly``)
        its Python's syntax and its fingerprint. ``field`` names the input an error is about (a compare's second
        file is ``against``). The costly part (a compile and a fingerprint: seconds of CPU for a large file) is left
        to ``_check_costly`` where the checks that cost a few database reads come first."""
        try:
            name = self._checked_name(file_name, content)
            if costly:
                self._check_costly(name, content)
        except InvalidSubmission as exc:
            exc.field = field
            raise
        return name

    def _check_costly(self, name: str, content: bytes, *, field: str = "file") -> None:
        """A checked file's Python syntax (compiled, where the setting asks) and its fingerprint, before any
        transaction: the near-clone index stores it (archive.py)."""
        if self.settings.check_python_syntax and name.lower().endswith(".py"):
            refused = python_syntax_error(name, content.decode("utf-8"))
            if refused:
                raise InvalidSubmission(refused, code="syntax_error", field=field)
        prepare_fingerprint(content, name)

    def _checked_name(self, file_name: str, content: bytes) -> str:
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
        check_file_language(lb.name, lb.lang, name)

    def _check_rate(
        self,
        s: Session,
        u: User,
        lb: Leaderboard,
        mode: SubmissionMode,
        now: datetime,
        *,
        cost: int = 1,
        profiled: int = 0,
    ) -> None:
        """At most N submissions per hour per user and leaderboard: a program's own limit; else the leaderboard's
        own limit (every mode counts); else the default for ranked submissions (lower) or for the other modes. A
        compare counts as the runs it makes (``cost``: two per round, and ``profiled``, two per benchmark case with
        profile, among them), a submission of another mode as one."""
        others = [m.value for m in SubmissionMode if m is not SubmissionMode.RANKED]
        if u.is_program:  # programs have their own limit, whatever the leaderboard allows people
            limit, modes, what = self.settings.program_rate_limit_per_hour, None, "times"
        elif lb.rate_limit_per_hour:
            limit, modes, what = lb.rate_limit_per_hour, None, "times"
        elif mode is SubmissionMode.RANKED:
            limit, modes, what = self.settings.ranked_rate_limit_per_hour, [Mode.RANKED.value], "ranked submissions"
        else:
            limit, modes, what = self.settings.rate_limit_per_hour, others, "test, benchmark, profile or compare runs"
        if not limit:
            return
        self._check_cost(cost, limit, f"the {limit} {what} you may send per hour to {lb.name!r}", profiled)
        window = now - timedelta(hours=1)
        conds = [Submission.leaderboard_id == lb.id, Submission.user_id == u.id, Submission.created_at > window]
        if modes is not None:
            conds.append(Submission.mode.in_(modes))
        # Newest first; every submission counts at least one, so the newest `limit` are all that can matter.
        recent = s.execute(
            select(Submission.created_at, SubmissionComparison.rounds)
            .outerjoin(SubmissionComparison, SubmissionComparison.submission_id == Submission.id)
            .where(*conds)
            .order_by(Submission.created_at.desc())
            .limit(limit)
        ).all()
        weights = [2 * rounds if rounds else 1 for _, rounds in recent]
        if sum(weights) + cost <= limit:
            return
        kept = 0  # the newest submissions that may stay in the window; the next one must leave it first
        while sum(weights[: kept + 1]) + cost <= limit:
            kept += 1
        retry_at = recent[kept].created_at + timedelta(hours=1)
        counting = ""
        if cost > 1 or any(w > 1 for w in weights):
            this = f"this one {cost}, " if cost > 1 else ""
            counting = f" (a compare counts as 2 runs per round: {this}the last hour's {sum(weights)})"
        raise RateLimited(
            f"You can send {limit} {what} per hour to {lb.name!r}{counting}; try again after {retry_at:%H:%M:%S} UTC.",
            retry_at,
        )

    @staticmethod
    def _check_cost(cost: int, cap: int, what: str, profiled: int = 0) -> None:
        """A compare that alone exceeds a limit could never run: say how many rounds fit instead of "wait".
        ``profiled``: the profile runs among ``cost`` (two per benchmark case, whatever the rounds)."""
        if cost <= cap:
            return
        fits = ((cap - profiled) // 2) // 2 * 2
        made = f"{cost - profiled} runs (2 per round)"
        made += f" and {profiled} profile runs (2 per benchmark case)" if profiled else ""
        advice = (
            f"use at most {fits} rounds (`rounds`; on the command line, --rounds {fits})"
            if fits >= COMPARE_MIN_ROUNDS
            else "a compare cannot run under this limit; ask an admin"
        )
        raise InvalidSubmission(
            f"A compare of {(cost - profiled) // 2} rounds makes {made}, more than {what}; {advice}.",
            code="too_many_rounds",
            field="rounds",
        )

    def _check_new_files(self, s: Session, u: User, digests: Sequence[str], now: datetime) -> None:
        """At most N different files stored per user in 24 hours (resubmitting one of them is always fine)."""
        cap = self.settings.max_new_files_per_day
        if not cap:
            return
        since = now - timedelta(days=1)
        rows = list(
            s.execute(
                select(SubmissionCode.sha256, func.min(Submission.created_at))
                .join(Submission, Submission.code_id == SubmissionCode.id)
                .where(Submission.user_id == u.id, Submission.created_at > since)
                .group_by(SubmissionCode.sha256)
            ).all()
        )
        # A compare's second files count too.
        rows += s.execute(
            select(SubmissionCode.sha256, func.min(Submission.created_at))
            .join(SubmissionComparison, SubmissionComparison.code_b_id == SubmissionCode.id)
            .join(Submission, Submission.id == SubmissionComparison.submission_id)
            .where(Submission.user_id == u.id, Submission.created_at > since)
            .group_by(SubmissionCode.sha256)
        ).all()
        first: dict[str, datetime] = {}
        for sha, at in rows:
            first[sha] = min(at, first.get(sha, at))
        new = {d for d in digests if d not in first}
        if len(first) + len(new) <= cap:
            return
        retry_at = min(first.values(), default=now) + timedelta(days=1)
        raise RateLimited(
            f"You sent {len(first)} different files in the last 24 hours, the most allowed; resubmit one of them, or "
            f"send {'them' if len(new) > 1 else 'a new one'} after {retry_at:%Y-%m-%d %H:%M} UTC.",
            retry_at,
        )

    def _check_pending(self, s: Session, u: User, new_jobs: int, *, compare_rounds: int = 0, profiled: int = 0) -> None:
        """At most N runs queued or running per user; a compare's job counts as its runs (2 per round)."""
        pending = self._pending_runs(s, u)
        cap = self.settings.program_max_pending_jobs if u.is_program else self.settings.max_pending_jobs_per_user
        if compare_rounds:
            self._check_cost(new_jobs, cap, f"the {cap} runs you may have waiting or running", profiled)
        if int(pending or 0) + new_jobs > cap:
            counting = (" (a compare counts as 2 runs per round, and with profile 2 more per benchmark case)"
                        if compare_rounds else "")  # fmt: skip
            raise RateLimited(
                f"You have {pending} runs waiting or running (at most {cap}){counting}; wait for some to finish.",
                self.clock() + timedelta(minutes=1),
            )

    @staticmethod
    def _pending_runs(s: Session, u: User) -> int:
        """The user's runs queued or running; a compare's job counts as its runs (2 per round)."""
        weight = func.coalesce(2 * SubmissionComparison.rounds, 1)
        pending = s.scalar(
            select(func.coalesce(func.sum(weight), 0))
            .select_from(Job)
            .join(Submission, Submission.id == Job.submission_id)
            .outerjoin(SubmissionComparison, SubmissionComparison.submission_id == Submission.id)
            .where(Submission.user_id == u.id, Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)))
        )
        return int(pending or 0)

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
        """Cancel the owner's unfinished jobs of a submission (a running job's result is then discarded). A running
        job is charged to the GPU budgets of the account and the token that sent it from its start to now (the
        budgets count a cancelled job's start to end, ``budgets.spent_seconds``); a queued one is charged nothing
        (its start is cleared: nothing of it runs now)."""
        with self.db.transaction() as s:
            now = lease_now(s, self.clock)  # the clock its start was written by (the database's), not this host's
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
                raise AlreadyFinished(
                    f"Submission #{submission_id} has already finished; there is nothing to cancel (to take it off "
                    "the rankings, delete it)."
                )
            for job in jobs:
                if job.status == JobStatus.QUEUED.value:
                    job.started_at = None  # no attempt runs: an earlier one that died is not charged either
                job.status = JobStatus.CANCELLED.value
                job.error = "cancelled by its author"
                job.finished_at = now
                job.lease_owner = None
                job.lease_expires_at = None
                s.add(JobEvent(job_id=job.id, phase="cancelled", detail="cancelled by its author", created_at=now))
            s.flush()
            return self._status(s, sub)

    def cancel_or_delete(self, submission_id: int, user: UserRef) -> str:
        """The owner's withdrawal: cancel the submission while it is queued or running, else take it off the
        rankings. Says which: "cancelled" or "deleted"."""
        try:
            self.cancel(submission_id, user)
            return "cancelled"
        except AlreadyFinished:
            self.delete_submission(submission_id, user=user)
            return "deleted"

    def list_leaderboards(
        self, *, include_hidden: bool = False, viewer: UserRef | None = None
    ) -> tuple[LeaderboardSummary, ...]:
        """Every visible leaderboard, the hidden ones ``viewer`` joined with an invite code, or (``include_hidden``, an
        admin's) all."""
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
                shown: ColumnElement[bool] = Leaderboard.visible.is_(True)
                if viewer is not None:  # and the hidden ones they joined with an invite code
                    joined = (
                        select(BoardMember.leaderboard_id)
                        .join(User, User.id == BoardMember.user_id)
                        .where(User.identity == viewer.identity)
                    )
                    shown = or_(shown, Leaderboard.id.in_(joined))
                stmt = stmt.where(shown)
            return tuple(self._summary(lb, int(counts.get(lb.id, 0))) for lb in s.scalars(stmt))

    def leaderboard(
        self, name: str, *, include_hidden: bool = False, viewer: UserRef | None = None
    ) -> LeaderboardSummary:
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=include_hidden, viewer=viewer)
            count = s.scalar(
                select(func.count())
                .select_from(Submission)
                .where(Submission.leaderboard_id == lb.id, Submission.deleted.is_(False))
            )
            return self._summary(lb, int(count or 0))

    def roofline_score_ns(
        self, leaderboard: str, device: str | None = None, *, viewer: UserRef | None = None
    ) -> float | None:
        """The score a kernel at the device's roofline bound would get (ns): the ranking rule over the roofline bounds
        the runner computed for the public run of the best ranked entry on the device (the cases and the device are
        everyone's). A ranking score's share of the speed of light is this over the score (under the geometric
        mean: exactly the geometric mean of its benchmarks' shares). None while nobody is ranked, or where the run
        has no bounds (an unknown device, the CPU, a result stored before they were computed)."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False, viewer=viewer)
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
        viewer: UserRef | None = None,
    ) -> Ranking:
        """The best eligible ranked submission per user on one device, best first (ties: earlier submission).

        ``device`` may be omitted when the leaderboard has only one. ``programs`` says whether program accounts'
        entries count (default ``KERNELCUP_RANKINGS_SHOW_PROGRAMS``); ``offset``/``limit`` page through it.
        """
        programs = self.settings.rankings_show_programs if programs is None else programs
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False, viewer=viewer)
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
        self, user: UserRef, leaderboard: str | None = None, *, limit: int = 50, admin: bool = False
    ) -> tuple[SubmissionSummary, ...]:
        """A user's own submissions, newest first (deleted ones left out). A hidden ``leaderboard`` is unknown to
        anyone but an admin (an empty list would tell that it exists)."""
        with self.db.transaction() as s:
            u = s.scalar(select(User).where(User.identity == user.identity))
            if u is None:
                return ()
            stmt = select(Submission).where(Submission.user_id == u.id, Submission.deleted.is_(False))
            if leaderboard is not None:
                board = self._leaderboard(s, leaderboard, include_hidden=admin, viewer=user)
                stmt = stmt.where(Submission.leaderboard_id == board.id)
            subs = s.scalars(stmt.order_by(Submission.id.desc()).limit(limit)).all()
            notes = late_notes(s, (sub.id for sub in subs))
            return tuple(
                SubmissionSummary(
                    submission_id=sub.id,
                    leaderboard=sub.leaderboard.name,
                    file_name=sub.file_name,
                    mode=SubmissionMode(sub.mode),
                    created_at=sub.created_at,
                    jobs=self._status(s, sub, events=False).jobs,
                    moderation=sub.moderation,
                    moderation_note=author_text(sub.moderation, sub.moderation_reason),
                    late=notes.get(sub.id),
                )
                for sub in subs
            )

    def task(self, name: str, *, viewer: UserRef | None = None) -> TaskView:
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=False, viewer=viewer)
            snap = TaskSnapshot.load(lb.task)
            task, templates = snap.task, snap.templates
            names = {label: served_file_name(lb.name, label, template_file_name(snap, label)) for label in templates}
            return TaskView(
                name=lb.name,
                description=lb.description,
                lang=lb.lang,
                devices=tuple(lb.devices),
                deadline=lb.deadline,
                ranking_by=lb.ranking_by,
                files=dict(snap.files),
                templates={label: served_template(lb.name, names[label], text) for label, text in templates.items()},
                template_files=names,
                tests=tuple(task.tests),
                benchmarks=tuple(task.benchmarks),
                dtype=task.dtype.value,  # (snapshots from before it was declared: the default, fp32)
                baselines=("reference", *(b.label for b in task.baselines)),
                language=language_text(lb.lang),
            )

    def public_folder(self, name: str, *, viewer: UserRef | None = None) -> PublicFolder:
        """A visible leaderboard's public problem folder (``leaderboards.public_problem``): task.yml without its
        held-out cases, the files that travel with a run, the templates. A hidden one only for its ``viewer``'s
        members, as ``task``."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=False, viewer=viewer)
            return public_folder(lb.name, lb.task)

    def template(self, name: str, language: str, *, viewer: UserRef | None = None) -> TemplateFile:
        view = self.task(name, viewer=viewer)
        if language not in view.templates:
            offered = ", ".join(sorted(view.templates)) or "none"
            raise NotFound(f"Leaderboard {name!r} has no {language!r} template; it offers: {offered}.")
        return TemplateFile(view.name, language, view.template_files[language], view.templates[language])

    # -- announcements ---------------------------------------------------------------------------------------

    def claim_announcements(self, claimer: str, *, limit: int = 20) -> tuple[RankChangeView, ...]:
        """Hand out rank changes not announced yet and mark them announced, in one transaction.

        Each change is handed out once across processes and restarts (at most once: a claimer that crashes
        after claiming loses that announcement rather than repeating it). Changes of quarantined or hacked entries,
        and of leaderboards an open admin alert holds (``leaderboards/rejudge.py``), wait. Changes of hidden
        leaderboards are never announced: they are marked handled (by ``HIDDEN_BOARD``), so a board made public later
        does not post its past.
        """
        now = self.clock()
        with self.db.transaction() as s:
            hidden = select(Leaderboard.id).where(Leaderboard.visible.is_(False))
            s.execute(
                update(RankChange)
                .where(RankChange.announced_at.is_(None), RankChange.leaderboard_id.in_(hidden))
                .values(announced_at=now, announced_by=HIDDEN_BOARD)
            )
            ids = s.scalars(
                select(RankChange.id)
                .join(Submission, Submission.id == RankChange.submission_id)
                .join(Leaderboard, Leaderboard.id == RankChange.leaderboard_id)
                .where(
                    RankChange.announced_at.is_(None),
                    Leaderboard.visible.is_(True),
                    ranks_condition(),
                    ~announcements_held(RankChange),
                )
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


def python_syntax_error(name: str, text: str) -> str:
    """Why Python would refuse to compile ``text`` ('' when it would not): said at once, before anything is stored
    or queued, so a candidate that cannot even be imported costs no GPU (issue 33: compile errors come back without
    waiting for the GPU). Compiled, not only parsed (a ``return`` outside a function is the compiler's refusal);
    compiling runs none of the file, and CPython bounds what its constant folding may build."""
    try:
        compile(text.removeprefix("\ufeff"), name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "") if exc.lineno else ""
        return (f"{name} is not valid Python{f' ({where})' if where else ''}: {exc.msg}. Nothing was queued; fix "
                "it and submit again.")  # fmt: skip
    except (ValueError, RecursionError, MemoryError) as exc:  # absurd nesting or size
        return f"{name} cannot be compiled as Python ({type(exc).__name__}). Nothing was queued."
    return ""
