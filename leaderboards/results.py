"""The service's answers: frozen dataclasses of plain values that every surface renders its own way.

Nothing here carries a secret seed or a secret run's result; the only thing said about a secret run is whether
it passed (a competitor needs to know why a submission is not ranked).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runners.compare import CPU_ROUNDS
from runners.contract import Comparison, RunRequest, RunResult, Verdict


class JobStatus(enum.StrEnum):
    """Where a job is in its life (``docs/queue.md``); stored as its value in ``jobs.status``."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self not in (JobStatus.QUEUED, JobStatus.RUNNING)


class SubmissionMode(enum.StrEnum):
    """What a submission asked for: a run contract mode (``runners.contract.Mode``), or ``compare`` — two files
    benchmarked in interleaved rounds on one device (``LeaderboardService.compare``), never ranked."""

    TEST = "test"
    BENCHMARK = "benchmark"
    RANKED = "ranked"
    PROFILE = "profile"
    COMPARE = "compare"


COMPARE_MIN_ROUNDS = 2
COMPARE_MAX_ROUNDS = 20
"""A compare through the service: even rounds in this range (each costs two runs of the device)."""
COMPARE_DEFAULT_ROUNDS = 14
"""The most rounds a compare on a GPU through the service runs when none are asked for (it stops earlier once the
ratio is known within ±0.4%, ``runners.compare.PRECISION``): its 28 runs fit the default hourly limit of 30."""
COMPARE_CPU_ROUNDS = CPU_ROUNDS
"""The same on the CPU, whose noise seldom lets a comparison settle (``runners.compare.CPU_ROUNDS``)."""


@dataclass(frozen=True)
class ComparisonView:
    """A compare submission: its two files, its device and rounds, and the comparison once it ran (None before,
    and when its job failed for a reason that was not a file's: then the job's error says why)."""

    file_a: str
    file_b: str
    code_b_sha256: str
    device: str
    rounds: int
    result: Comparison | None

    @property
    def runs(self) -> int:
        """Runs of the device it costs: one of each file per round."""
        return 2 * self.rounds


@dataclass(frozen=True)
class UserRef:
    """Who is acting, as a surface knows them: a Discord user (``discord_id``), a GitHub user who signed in on the web
    (``github_id``, GitHub's numeric account id, which survives a rename) or a local/CLI name."""

    name: str
    discord_id: int | None = None
    github_id: int | None = None

    @property
    def identity(self) -> str:
        if self.discord_id is not None:
            return f"discord:{self.discord_id}"
        return f"github:{self.github_id}" if self.github_id is not None else f"local:{self.name}"

    @classmethod
    def parse(cls, text: str) -> UserRef:
        """A user as an admin types one: ``discord:<id>``, ``github:<id>`` or a local name (``local:<name>`` or just
        ``<name>``)."""
        kind, sep, rest = text.partition(":")
        if sep and kind == "discord" and rest.strip().isdigit():
            return cls(name=f"discord:{rest.strip()}", discord_id=int(rest.strip()))
        if sep and kind == "github" and rest.strip().isdigit():
            return cls(name=f"github:{rest.strip()}", github_id=int(rest.strip()))
        return cls(name=rest if sep and kind == "local" else text)


@dataclass(frozen=True)
class JobReceipt:
    job_id: int
    device: str
    queue_position: int | None


@dataclass(frozen=True)
class SubmissionReceipt:
    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    mode: SubmissionMode
    created_at: datetime
    jobs: tuple[JobReceipt, ...]
    duplicate: bool = False
    """True when nothing new was queued: the same user sent the same file to the same leaderboard, mode and devices
    a moment ago, and this is that earlier submission's receipt (its id, its jobs). ``force`` runs it again."""
    visible: bool = True
    """Whether the leaderboard is public: a hidden one's submission is shown to its author only, never to a channel."""


@dataclass(frozen=True)
class JobEventView:
    phase: str
    detail: str
    created_at: datetime


@dataclass(frozen=True)
class JobView:
    job_id: int
    device: str
    status: JobStatus
    verdict: Verdict | None
    attempts: int
    max_attempts: int
    error: str | None
    queue_position: int | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    score_ns: float | None
    """The public run's score (timed modes), or None."""
    ranked_score_ns: float | None
    """Ranked jobs whose two runs passed: the score the job ranks by, from both runs (``leaderboards.pooling``: the
    two runs pooled case by case where they agree; jobs recorded before pooling, the slower of the two), or None."""
    public_passed: bool | None
    secret_passed: bool | None
    """Only for ranked jobs: whether the secret-seed run passed (its results are never shown)."""
    rank: int | None
    """The submission's current rank on this device if it is the user's ranked best, else None."""
    events: tuple[JobEventView, ...] = ()
    runner_online: bool | None = None
    """For a queued job: whether a live worker (heartbeat within ``leaderboards.queue.WORKER_ALIVE_S``) serves its
    device; None when the job is not waiting."""
    ranked_note: str | None = None
    """For the author: why the ranked score is not a plain pooling of the two runs (a case that ran clearly slower on
    the secret-seed inputs, flagged for an admin, or in the public run), else None."""
    ranked_flagged: bool = False
    """A case ran clearly slower on the secret-seed inputs than on the public ones: for an admin to look at."""

    @property
    def finished(self) -> bool:
        return self.status.finished

    @property
    def accepted(self) -> bool:
        """The job ran to the end and every run of it passed (whatever its score or rank)."""
        return self.status is JobStatus.SUCCEEDED and self.verdict is Verdict.ACCEPTED


@dataclass(frozen=True)
class SubmissionStatus:
    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    mode: SubmissionMode
    created_at: datetime
    deleted: bool
    jobs: tuple[JobView, ...]
    comparison: ComparisonView | None = None
    """Only for a compare (``mode`` compare): the second file, the rounds, and the ratios once it ran."""
    moderation: str | None = None
    """flagged, quarantined, hacked or cleared (``leaderboards/moderation.py``); None when never moderated."""
    moderation_note: str | None = None
    """What the author reads about it: the state in words and the moderator's reason."""

    @property
    def done(self) -> bool:
        """Every job has finished (succeeded, failed, timed out or cancelled)."""
        return all(j.finished for j in self.jobs)

    @property
    def accepted(self) -> bool:
        """Every job was accepted."""
        return bool(self.jobs) and all(j.accepted for j in self.jobs)


@dataclass(frozen=True)
class PublicResult:
    device: str
    result: RunResult


@dataclass(frozen=True)
class SubmissionDetails:
    """Everything the owner may see: status, their code and the results of the public runs."""

    status: SubmissionStatus
    code: str
    code_sha256: str
    results: tuple[PublicResult, ...]

    @property
    def accepted(self) -> bool:
        return self.status.accepted


@dataclass(frozen=True)
class SubmissionCodeView:
    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    code: str
    code_sha256: str
    public: bool
    """True when anyone may read it (a ranked entry after a deadline whose problem set made code public)."""


@dataclass(frozen=True)
class SubmissionSummary:
    submission_id: int
    leaderboard: str
    file_name: str
    mode: SubmissionMode
    created_at: datetime
    jobs: tuple[JobView, ...]
    moderation: str | None = None
    """flagged, quarantined, hacked or cleared (``leaderboards/moderation.py``); None when never moderated."""
    moderation_note: str | None = None
    """What the author reads about it: the state in words and the moderator's reason."""
    late: str | None = None
    """Made after the deadline: "after the deadline: unranked practice", or "late, admitted by X because Y"."""


@dataclass(frozen=True)
class LeaderboardSummary:
    name: str
    description: str
    lang: str
    deadline: datetime
    devices: tuple[str, ...]
    ranking_by: str
    is_open: bool
    paused: bool
    visible: bool
    rate_limit_per_hour: int | None
    submissions: int
    created_at: datetime
    creator: str = ""
    problem: str = ""
    code_public_after_deadline: bool = False


@dataclass(frozen=True)
class RankingEntry:
    rank: int
    user_id: int
    user_name: str
    submission_id: int
    file_name: str
    score_ns: float
    submitted_at: datetime
    is_program: bool = False


@dataclass(frozen=True)
class Ranking:
    leaderboard: str
    device: str
    ranking_by: str
    entries: tuple[RankingEntry, ...]
    total: int
    """How many users are ranked (``entries`` may be cut by ``limit`` and ``offset``)."""
    programs: bool = True
    """Whether program accounts' entries are included (in ``entries``, ``total`` and the ranks)."""
    offset: int = 0


@dataclass(frozen=True)
class LiveImpact:
    """What a change to a live leaderboard touches: its queued and running jobs, its ranked entries, and whose."""

    live_jobs: int
    ranked_entries: int
    users: tuple[str, ...]
    """The names of the users with a live job or a ranked entry, at most ``LIVE_USERS_SHOWN`` of them."""
    more_users: int = 0
    """How many more users there are beyond ``users``."""

    @property
    def live(self) -> bool:
        return bool(self.live_jobs or self.ranked_entries)

    def text(self) -> str:
        jobs = f"{self.live_jobs} queued or running job{'' if self.live_jobs == 1 else 's'}"
        entries = f"{self.ranked_entries} ranked entr{'y' if self.ranked_entries == 1 else 'ies'}"
        who = ", ".join(self.users) + (f" and {self.more_users} more" if self.more_users else "")
        return f"{jobs} and {entries}" + (f" (of {who})" if who else "")


@dataclass(frozen=True)
class HistoryPoint:
    """From ``submitted_at`` on, the best score was ``score_ns`` (submission ``submission_id`` set it)."""

    submitted_at: datetime
    score_ns: float
    submission_id: int


@dataclass(frozen=True)
class HistorySeries:
    """One user's best over time: the steps where they improved, oldest first; the last is their ranked best."""

    rank: int
    user_id: int
    user_name: str
    is_program: bool
    points: tuple[HistoryPoint, ...]
    thinned: bool
    """Whether steps were left out to keep the series within the answer's ``max_points``."""


@dataclass(frozen=True)
class ScoreHistory:
    """Best score over time on one leaderboard and device: the leaderboard's (``best``: the record, whoever held
    it) and a page of the ranked users' own, in ranking order. Every series has at most ``max_points`` points."""

    leaderboard: str
    device: str
    best: tuple[HistoryPoint, ...]
    series: tuple[HistorySeries, ...]
    total: int
    """How many users have a series (``series`` is one page of them: ``offset``, ``limit``)."""
    offset: int
    limit: int
    max_points: int
    best_thinned: bool = False


@dataclass(frozen=True)
class TaskView:
    name: str
    description: str
    lang: str
    devices: tuple[str, ...]
    deadline: datetime
    ranking_by: str
    files: dict[str, str]
    templates: dict[str, str]
    """Template content by language label (pytorch, triton, cuda-inline, cuda)."""
    template_files: dict[str, str]
    """The file name of each template, by language label."""
    tests: tuple[dict[str, Any], ...]
    benchmarks: tuple[dict[str, Any], ...]
    dtype: str = "fp32"
    """The data type whose peak bounds the roofline (task.yml's ``dtype``)."""
    baselines: tuple[str, ...] = ("reference",)
    """What timed runs report a speedup over: the reference, then task.yml's ``baselines`` labels."""
    language: str = ""
    """The submissions' language in words, with the files it takes: 'CUTLASS / CuTe C++ (CUDA): .cu, .cuh files'."""


@dataclass(frozen=True)
class TemplateFile:
    leaderboard: str
    language: str
    file_name: str
    content: str


@dataclass(frozen=True)
class LeaderboardUpdate:
    leaderboard: LeaderboardSummary
    changed: tuple[str, ...]
    """Names of the fields that changed (empty: nothing to do)."""
    ranking_reset: bool
    """True when a forced change made old scores incomparable and the ranking started over."""
    created: bool = False


class SyncAction(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    NEEDS_FORCE = "needs --force"


@dataclass(frozen=True)
class SyncItem:
    """What a problem-set sync does (or would do) to one leaderboard."""

    leaderboard: str
    action: SyncAction
    changed: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    """Why it needs --force (scores would become incomparable, or another set owns it)."""
    ranking_reset: bool = False


@dataclass(frozen=True)
class SetEntry:
    """One leaderboard of a problem set, as ``apply_problem_set`` takes it (the problem already validated)."""

    name: str
    problem: Any
    """The ``leaderboards.problems.Problem``."""
    deadline: datetime
    devices: tuple[str, ...]
    code_public_after_deadline: bool = False


@dataclass(frozen=True)
class UserView:
    user_id: int
    name: str
    identity: str
    discord_id: int | None
    is_banned: bool
    ban_reason: str | None
    is_program: bool = False


class Scope(enum.StrEnum):
    """What an API token may do: ``submit`` (submit, see and cancel one's own submissions) and ``admin``."""

    SUBMIT = "submit"
    ADMIN = "admin"


@dataclass(frozen=True)
class TokenView:
    """An API token as its owner and admins see it: never the token itself, only its first characters."""

    token_id: int
    user_name: str
    identity: str
    is_program: bool
    name: str
    prefix: str
    scopes: tuple[Scope, ...]
    created_at: datetime
    created_by: str
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class NewToken:
    """A token just created: ``token`` is shown this once and stored only as a hash."""

    token: str
    info: TokenView


@dataclass(frozen=True)
class Principal:
    """Who a valid token speaks for, and what it may do."""

    user: UserRef
    user_id: int
    is_program: bool
    token_id: int
    scopes: frozenset[Scope]
    expires_at: datetime | None

    @property
    def is_admin(self) -> bool:
        return Scope.ADMIN in self.scopes

    @property
    def actor(self) -> str:
        """The name admin actions are recorded under: the user and the token that acted."""
        return f"{self.user.identity} (token #{self.token_id})"


@dataclass(frozen=True)
class WorkerView:
    worker_id: str
    hostname: str
    devices: tuple[str, ...]
    heartbeat_at: datetime
    healthy: bool = True
    """False while the worker does not claim jobs because its runner failed its self-check or jobs in a row."""
    health_note: str = ""
    """Why it is unhealthy (the failing check), for the operator."""


@dataclass(frozen=True)
class QueueStats:
    jobs: dict[str, dict[str, int]]
    """Job counts by device, then by status."""
    oldest_queued_at: datetime | None
    workers: tuple[WorkerView, ...]
    """Workers whose heartbeat is recent."""


@dataclass(frozen=True)
class UsageStats:
    since: datetime | None
    submissions: int
    users: int
    by_leaderboard: dict[str, int]
    by_mode: dict[str, int]
    runs_seconds: float
    """Wall time the runners spent on runs recorded since ``since``."""
    impossible_runs: int = 0
    """Runs rejected by the speed-of-light gate (a score faster than the device can do the work) since ``since``."""
    impossible_latest: tuple[ImpossibleRun, ...] = ()
    """The newest few of them, for an admin to look at."""


@dataclass(frozen=True)
class ImpossibleRun:
    """A run the speed-of-light gate rejected: a forgery or a broken timer, worth an admin's look."""

    submission_id: int
    user_name: str
    leaderboard: str
    device: str
    secret: bool
    at: datetime
    message: str
    """The gate's message; empty for a secret run (its timings are not shown)."""


@dataclass(frozen=True)
class PlannedRun:
    """One run a worker must make for a job: the public run, or (ranked) the secret-seed run."""

    job_id: int
    secret: bool
    request: RunRequest
    recorded: bool
    """Already stored by an earlier attempt: skip it."""
    against: RunRequest | None = None
    """A compare: the second file's request. The worker runs ``rounds`` rounds of both (``runners.compare``) and
    stores the comparison (``record_comparison``), not a run."""
    rounds: int = 0
    profile: bool = False
    """A compare asked for kernel metrics: after the rounds, each case of both files in profile mode
    (``runners.compare_profile``)."""


@dataclass(frozen=True)
class RankChangeView:
    change_id: int
    leaderboard: str
    device: str
    user_id: int
    user_name: str
    user_discord_id: int | None
    submission_id: int
    old_rank: int | None
    new_rank: int
    score_ns: float
    previous_score_ns: float | None
    created_at: datetime


@dataclass(frozen=True)
class RecordedRun:
    run_id: int
    job_id: int
    submission_id: int
    device: str
    secret: bool
    passed: bool
    verdict: str
    score_ns: float | None
    created: bool
    """False when this job already had a result of this kind (nothing was overwritten)."""
    eligible: bool = False
    """True when this run completed a ranked job whose public and secret runs both passed."""
    rank: int | None = None
    personal_best: bool = False
    rank_change: RankChangeView | None = None
    superseded: bool = False
    """True when the run answered an earlier version of the job's request (the problem changed while it ran): kept,
    never ranked."""
