"""The API's JSON shapes (pydantic), shared with ``kernelcup.client``: what the server sends is what the client
parses. No FastAPI here, so the client imports it without the server's dependencies.

Field names are the service's (``leaderboards.results``), so a view converts with ``Model.model_validate(view)``
(``from_attributes``) and the CLI renders an API answer with the same code as a local one. A few extras exist only
here: links to follow a submission, the speed-of-light share of each benchmark, the template languages.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from leaderboards.results import JobStatus, Scope, SubmissionMode
from runners.contract import Comparison, RunResult, Verdict

API_PREFIX = "/api/v1"
RATE_LIMIT_MAX = 1_000_000
"""The most submissions per user per hour a leaderboard may allow (its column is a 32-bit integer; a larger number
in a request is an invalid field, not a database overflow)."""


DATE_MIN = datetime(1970, 1, 1, tzinfo=UTC)
DATE_MAX = datetime(9000, 1, 1, tzinfo=UTC)
"""The range of a date a request gives (a deadline): its ends keep clear of Python's, where converting to UTC or adding
a day overflows (a 500); a time without a zone is UTC."""


def _in_date_range(value: datetime) -> datetime:
    outside = f"must be a date from {DATE_MIN:%Y-%m-%d} to {DATE_MAX:%Y-%m-%d}"
    try:
        when = (value.replace(tzinfo=UTC) if value.tzinfo is None else value).astimezone(UTC)
    except OverflowError:  # past year 1 or 9999 in UTC
        raise ValueError(outside) from None
    if not DATE_MIN <= when <= DATE_MAX:
        raise ValueError(outside)
    return when


RequestDate = Annotated[datetime, AfterValidator(_in_date_range)]


class Model(BaseModel):
    model_config = ConfigDict(from_attributes=True, frozen=True)


# -- errors ------------------------------------------------------------------------------------------------------


class ErrorBody(Model):
    code: str = Field(description="A stable name of the error, e.g. file_too_large, leaderboard_closed.")
    message: str = Field(description="What went wrong and how to fix it, for people.")
    field: str | None = Field(default=None, description="The request field the error is about, where one is.")


class ErrorOut(Model):
    error: ErrorBody


# -- leaderboards ------------------------------------------------------------------------------------------------


class LeaderboardOut(Model):
    name: str
    description: str
    lang: str
    deadline: datetime
    devices: tuple[str, ...]
    ranking_by: str
    is_open: bool
    paused: bool
    visible: bool
    submissions: int
    created_at: datetime
    rate_limit_per_hour: int | None = None
    problem: str = ""
    code_public_after_deadline: bool = False


class LeaderboardDetailOut(LeaderboardOut):
    languages: tuple[str, ...] = Field(description="Template languages: GET .../templates/{language}.")
    template_files: dict[str, str] = Field(description="The file name of each template, by language.")
    tests: tuple[dict[str, Any], ...]
    benchmarks: tuple[dict[str, Any], ...]
    dtype: str = Field(default="fp32", description="The data type whose peak bounds the roofline (fp32, fp16, ...).")
    baselines: tuple[str, ...] = Field(
        default=("reference",), description="What timed runs report a speedup over (RunResult.baselines' labels)."
    )
    language: str = Field(
        default="", description="The submissions' language in words with the files it takes (lang is its key)."
    )


class ProblemFolderOut(Model):
    leaderboard: str
    problem: str = Field(description="The problem folder's name.")
    fingerprint: str = Field(description="sha256 of the files: also the answer's ETag (send If-None-Match).")
    files: dict[str, str] = Field(
        description="Every file of the public problem folder by its relative path: task.yml (without held-out "
        "cases), the reference and the files that travel with a run (_lib/ among them where it is imported), the "
        "templates."
    )


class TemplateOut(Model):
    leaderboard: str
    language: str
    file_name: str
    content: str


class RankingEntryOut(Model):
    rank: int
    user_name: str
    submission_id: int
    file_name: str
    score_ns: float
    submitted_at: datetime
    is_program: bool = False


class RankingOut(Model):
    leaderboard: str
    device: str
    ranking_by: str
    entries: tuple[RankingEntryOut, ...]
    total: int = Field(description="How many are ranked (entries are one page of them).")
    programs: bool = Field(description="Whether program accounts' entries are included.")
    offset: int = 0


class HistoryPoint(Model):
    submitted_at: datetime = Field(description="From this submission's time on, the best was score_ns.")
    score_ns: float
    submission_id: int


class HistorySeriesOut(Model):
    rank: int
    user_id: int
    user_name: str
    is_program: bool
    points: tuple[HistoryPoint, ...] = Field(
        description="The user's best over time: only the steps where it improved, oldest first; the last is their "
        "ranked best."
    )
    thinned: bool = Field(description="Steps were left out to keep the series within max_points.")


class HistoryOut(Model):
    leaderboard: str
    device: str
    best: tuple[HistoryPoint, ...] = Field(
        description="The leaderboard's best score over time (whoever held it): its steps, oldest first."
    )
    best_thinned: bool
    series: tuple[HistorySeriesOut, ...] = Field(description="A page of the ranked users' own, in ranking order.")
    total: int = Field(description="How many users have a series (page with offset and limit).")
    offset: int
    limit: int
    max_points: int = Field(description="The most points in any series of this answer (?points=).")


# -- submissions -------------------------------------------------------------------------------------------------


class SubmissionLinks(Model):
    self: str
    events: str = Field(description="Server-Sent Events: live progress until the submission is done.")
    code: str


class JobReceiptOut(Model):
    job_id: int
    device: str
    queue_position: int | None


class SubmissionReceiptOut(Model):
    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    mode: SubmissionMode
    created_at: datetime
    jobs: tuple[JobReceiptOut, ...]
    links: SubmissionLinks
    duplicate: bool = Field(
        False,
        description="True when nothing new was queued: you sent this same file to the same leaderboard, mode and "
        "devices a moment ago, and this is that earlier submission (its id, its jobs). `force=true` runs it again.",
    )


class JobEventOut(Model):
    phase: str
    detail: str
    created_at: datetime


class JobOut(Model):
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
    score_ns: float | None = Field(description="The public run's score (ns, lower is better).")
    ranked_score_ns: float | None = Field(
        default=None,
        description="Ranked, both runs passed: the score it ranks by (ns), the worse of the public run's and the "
        "secret-seed run's, as the rankings show it.",
    )
    public_passed: bool | None
    secret_passed: bool | None = Field(description="Ranked: whether the secret-seed run passed (nothing more).")
    rank: int | None = Field(description="Its rank on this device while it is the user's best.")
    events: tuple[JobEventOut, ...] = ()
    runner_online: bool | None = Field(
        default=None,
        description="A queued job: whether a live worker serves its device (false: nothing runs it right now); "
        "null when the job is not waiting.",
    )
    finished: bool
    accepted: bool


class ComparisonOut(Model):
    """A compare submission (mode `compare`): the two files, the device and rounds, and the comparison once run."""

    file_a: str = Field(description="The first file (A): the submission's own file.")
    file_b: str = Field(description="The second file (B), sent as `against`.")
    code_b_sha256: str
    device: str
    rounds: int = Field(description="Rounds asked for; each runs both files once, the order alternating.")
    result: Comparison | None = Field(
        description="Per case and overall: the A/B time ratio (geometric mean over the rounds; below 1: A is "
        "faster) with its 95% paired t interval (`ci_low`, `ci_high`), each file's median, and a verdict (the first "
        "failed run's, naming its file). Null until the job has finished, and when it failed on our side."
    )


MODERATION_DOC = (
    "flagged (still ranks), quarantined or hacked (out of every ranking), cleared; null when never moderated."
)
MODERATION_NOTE_DOC = "What the author reads about the moderation: the state in words and the moderator's reason."


class SubmissionStatusOut(Model):
    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    mode: SubmissionMode
    created_at: datetime
    deleted: bool
    jobs: tuple[JobOut, ...]
    done: bool
    accepted: bool
    comparison: ComparisonOut | None = Field(default=None, description="Only for mode `compare`.")
    moderation: str | None = Field(None, description=MODERATION_DOC)
    moderation_note: str | None = Field(None, description=MODERATION_NOTE_DOC)


class PublicResultOut(Model):
    device: str
    result: RunResult = Field(
        description="The public run: per-test verdicts, per-benchmark statistics and roofline shares "
        "(benchmarks[].roofline_share; the run's: roofline_share, with the peaks used in roofline), logs, and in "
        "profile mode each kernel's Nsight Compute metrics (`kernel_metrics`). Its `ncu_report` is always null "
        "here: the report is downloaded from `ncu_report_url`."
    )
    ncu_report_url: str | None = Field(
        default=None, description="Profile mode: where to download the Nsight Compute report (.ncu-rep), if any."
    )
    ncu_report_bytes: int | None = Field(default=None, description="The report's size in bytes.")


class SubmissionOut(Model):
    status: SubmissionStatusOut
    code_sha256: str
    results: tuple[PublicResultOut, ...]
    links: SubmissionLinks

    @property
    def accepted(self) -> bool:
        return self.status.accepted


class SubmissionSummaryOut(Model):
    submission_id: int
    leaderboard: str
    file_name: str
    mode: SubmissionMode
    created_at: datetime
    jobs: tuple[JobOut, ...]
    moderation: str | None = Field(None, description=MODERATION_DOC)
    moderation_note: str | None = Field(None, description=MODERATION_NOTE_DOC)
    late: str | None = Field(
        None, description="Made after the deadline: unranked practice, or 'late, admitted by X because Y'."
    )


class CodeOut(Model):
    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    code: str
    code_sha256: str
    public: bool


class ProgressOut(Model):
    """One ``progress`` event of a submission's event stream."""

    job_id: int
    device: str
    phase: str
    detail: str
    created_at: datetime | None
    event_id: int | None


# -- accounts ----------------------------------------------------------------------------------------------------


class MeOut(Model):
    user_name: str
    identity: str
    is_program: bool
    token_id: int
    scopes: tuple[Scope, ...]
    token_expires_at: datetime | None


class TokenOut(Model):
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


class NewTokenOut(Model):
    token: str = Field(description="Shown this once; only its hash is kept.")
    info: TokenOut


class NewTokenIn(Model):
    name: str = Field(default="", max_length=100)
    expires: str = Field(
        default="",
        description="Lifetime like 90d, 12h, 2w; empty: the server's KERNELCUP_TOKEN_EXPIRY_DAYS. The new token lasts "
        "at most as long as the token that makes it and (unless that is an admin's) KERNELCUP_TOKEN_EXPIRY_DAYS: a "
        "longer lifetime is shortened to that, and 'never' is refused.",
    )


# -- admin -------------------------------------------------------------------------------------------------------


class SyncIn(Model):
    path: str | None = Field(default=None, description="A problem-set file inside the server's problems folder.")
    force: bool = False
    skip_run: bool = Field(
        default=False, description="Do not run new or changed problems' references first (they are by default)."
    )


class SyncItemOut(Model):
    leaderboard: str
    action: str
    changed: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    ranking_reset: bool = False


class SyncReportOut(Model):
    items: list[SyncItemOut]
    applied: bool = Field(description="False when an entry needs force: then nothing was applied.")
    warnings: tuple[str, ...] = ()
    checked: tuple[str, ...] = Field(default=(), description="Problems whose reference was run first.")
    changes: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="Per updated leaderboard, what the sync changes, one text per entry of its item's `changed`: the "
        "field with its old and new values where short ('deadline 2026-12-31 18:00 -> 2030-12-31 00:00 UTC'), else "
        "its name. The problem set is the source of truth: a value an admin changed since is put back.",
    )


class CreateLeaderboardIn(Model):
    problem: str = Field(description="A problem folder inside the server's problems folder.")
    deadline: RequestDate
    devices: tuple[str, ...] = Field(min_length=1)
    name: str | None = None
    description: str | None = None
    visible: bool = True
    rate_limit_per_hour: int | None = Field(default=None, ge=1, le=RATE_LIMIT_MAX)
    code_public_after_deadline: bool = False
    skip_run: bool = Field(
        default=False,
        description="Open it without running the problem's reference on its own cases first (the check of "
        "`problems sync`); the devices are checked against the runner's routes either way.",
    )


class UpdateLeaderboardIn(Model):
    name: str | None = Field(
        None,
        description="A new name. Renaming a live leaderboard (queued or running jobs, ranked entries), or moving its "
        "deadline into the past, needs force: without it the answer is 409 needs_force saying what it affects.",
    )
    problem: str | None = None
    deadline: RequestDate | None = None
    devices: tuple[str, ...] | None = None
    description: str | None = None
    visible: bool | None = None
    code_public_after_deadline: bool | None = None
    force: bool = False
    skip_run: bool = Field(
        default=False,
        description="With a new problem: take it without running its reference on its own cases first (the check "
        "of `problems sync`); new devices are checked against the runner's routes either way.",
    )


class LeaderboardUpdateOut(Model):
    leaderboard: LeaderboardOut
    changed: tuple[str, ...]
    ranking_reset: bool


class RateLimitIn(Model):
    per_hour: int | None = Field(default=None, ge=1, le=RATE_LIMIT_MAX, description="None: the server-wide default.")


BAN_REASON_MAX = 500


class BanIn(Model):
    reason: str = Field(default="", max_length=BAN_REASON_MAX)


class ProgramIn(Model):
    program: bool


class UserOut(Model):
    user_id: int
    name: str
    identity: str
    is_banned: bool
    ban_reason: str | None
    is_program: bool


class WorkerOut(Model):
    worker_id: str
    hostname: str
    devices: tuple[str, ...]
    heartbeat_at: datetime
    healthy: bool = Field(default=True, description="False while its runner fails its self-check: it claims no jobs.")
    health_note: str = Field(default="", description="Why it is unhealthy (the failing check).")


class QueueStatsOut(Model):
    jobs: dict[str, dict[str, int]]
    oldest_queued_at: datetime | None
    workers: tuple[WorkerOut, ...]


class ImpossibleRunOut(Model):
    submission_id: int
    user_name: str
    leaderboard: str
    device: str
    secret: bool
    at: datetime
    message: str = Field(description="The gate's message; empty for a secret run.")


class UsageStatsOut(Model):
    since: datetime | None
    submissions: int
    users: int
    by_leaderboard: dict[str, int]
    by_mode: dict[str, int]
    runs_seconds: float
    impossible_runs: int = Field(description="Runs the speed-of-light gate rejected (faster than the device can be).")
    impossible_latest: list[ImpossibleRunOut] = Field(description="The newest of them.")


class StatsOut(Model):
    queue: QueueStatsOut
    usage: UsageStatsOut


class ReadinessOut(Model):
    ready: bool = Field(description="The status code says it too: 200 when ready, 503 when not (for load balancers).")
    database: str = Field(description="'ok', or why the database cannot be reached.")
    schema_: str = Field(alias="schema", description="'ok', or how the schema differs from the code's migrations.")
    devices_without_worker: tuple[str, ...] = Field(
        description="Devices of open leaderboards that no live, healthy worker serves: not offered on /submit."
    )
    workers_per_device: dict[str, int] = Field(
        description="For each device of an open leaderboard, how many live, healthy workers serve it."
    )
    unhealthy_workers: int = Field(
        description="Live workers that claim no jobs because their runner failed its self-check."
    )

    model_config = ConfigDict(from_attributes=True, frozen=True, populate_by_name=True)


# -- batches, reward records and replays, served by web/routes/batches.py ----------------------------------------


class RewardOut(Model):
    """The reward record, version 1 (JSON Schema: docs/schemas/reward.schema.json)."""

    version: int
    verdict: str
    accepted: bool
    correct_fraction: float
    speedups: dict[str, float]
    score_ns: float | None
    roofline_share: float | None
    ci_half_width: float | None
    flags: list[str]


class BatchItemOut(Model):
    position: int = Field(description="The candidate's place in the batch, from 0, in the order sent.")
    file_name: str
    submission_id: int | None = Field(description="Its submission; null when it was refused.")
    status: str = Field(description="refused, or its job's status (queued, running, succeeded, failed, …).")
    verdict: str | None
    score_ns: float | None
    duplicate: bool = Field(description="The same file was sent a moment ago: this is that earlier submission.")
    error_code: str | None = Field(description="Why it was refused (or, for a failed job, null and the message).")
    error_message: str | None
    error_field: str | None
    reward: RewardOut | None = Field(description="Its reward record once it finished (or was refused).")
    finished: bool


class BatchLinks(Model):
    self: str
    events: str


class BatchOut(Model):
    batch_id: int
    leaderboard: str
    device: str
    mode: str
    user_name: str
    created_at: datetime
    items: tuple[BatchItemOut, ...]
    finished: int = Field(description="How many candidates have finished (refused ones included).")
    done: bool
    links: BatchLinks


class ReplayCaseOut(Model):
    index: int
    original_median_ns: float | None
    original_low_ns: float | None = Field(description="The original median's 95% interval.")
    original_high_ns: float | None
    replay_median_ns: float | None
    within: bool | None = Field(description="The replay's median lies within the original's interval.")


class ReplayDeviceOut(Model):
    device: str
    original_verdict: str | None
    replay_status: str
    replay_verdict: str | None
    same_verdict: bool | None = Field(description="Null until the replay's job finished.")
    cases: tuple[ReplayCaseOut, ...]


class ReplayReportOut(Model):
    submission_id: int = Field(description="The replay.")
    replay_of: int = Field(description="The submission it re-times.")
    mode: str
    done: bool
    holds: bool | None = Field(description="Same verdicts and every median within its interval; null until done.")
    devices: tuple[ReplayDeviceOut, ...]


class DeviceRewardOut(Model):
    device: str
    status: str
    reward: RewardOut | None


class SubmissionRewardsOut(Model):
    submission_id: int
    done: bool
    rewards: tuple[DeviceRewardOut, ...]


# -- GPU budgets, served by web/routes/budgets.py ----------------------------------------------------------------


class BudgetOut(Model):
    subject: str = Field(description="account or token")
    user: str = Field(description="The account (a token's owner).")
    token_id: int | None
    seconds: float
    period_s: int
    spent_s: float = Field(description="Evaluation time on devices spent in the current period.")
    left_s: float
    period_start: datetime
    refills_at: datetime
    set_by: str
    updated_at: datetime


# -- invites to hidden leaderboards, served by web/routes/invites.py ---------------------------------------------


class InviteOut(Model):
    invite_id: int
    leaderboard: str
    prefix: str = Field(description="The code's first characters, to recognise it (never the code).")
    max_uses: int
    uses: int
    expires_at: datetime | None
    created_by: str
    created_at: datetime
    revoked_at: datetime | None


class NewInviteOut(Model):
    code: str = Field(description="The code: shown this once; only its hash is kept.")
    invite: InviteOut


class JoinedOut(Model):
    leaderboard: str
    already: bool = Field(description="You were a member before; no use of the code was spent.")


class MemberOut(Model):
    leaderboard: str
    user: str = Field(description="The member's identity (`discord:ID` or `local:NAME`).")
    user_name: str
    joined_at: datetime
    invite_id: int | None = Field(description="The invite they joined with; null: an admin added them.")
    invite_prefix: str | None = Field(description="That invite's first characters (never the code).")


# -- after the deadline, served by web/routes/late.py ------------------------------------------------------------


class LateJobOut(Model):
    device: str
    status: str
    verdict: str | None
    score_ns: float | None = Field(description="The public run's score (timed modes).")
    ranked_score_ns: float | None = Field(description="A ranked job whose two runs passed: the score it would rank by.")


class LateEntryOut(Model):
    submission_id: int
    leaderboard: str
    user_name: str
    file_name: str
    mode: SubmissionMode
    created_at: datetime
    jobs: tuple[LateJobOut, ...]
    note: str = Field(description="'after the deadline: unranked practice', or 'late, admitted by X because Y'.")
    admitted_by: str | None
    admitted_at: datetime | None


class LatePageOut(Model):
    leaderboard: str
    deadline: datetime
    entries: tuple[LateEntryOut, ...]
    total: int
    offset: int


# -- standings, served by web/routes/standings.py ----------------------------------------------------------------


class StandingRowOut(Model):
    rank: int
    tied: bool = Field(description="Another entry shares the rank: their scores cannot be told apart (95%).")
    user_name: str
    submission_id: int
    file_name: str
    score_ns: float
    low_ns: float | None = Field(description="The score's 95% interval (final standings only).")
    high_ns: float | None
    coverage: str | None = Field(description="'5 of 5 held-out cases' once the entry's system test ran.")
    note: str | None = Field(
        None,
        description="'late, admitted by X because Y' for an entry an admin let in late; 're-timed on torch X: -1.2%' "
        "for one a rejudge ran again (live standings); '; ' between two.",
    )
    holdout_ns: float | None = Field(
        None,
        description="Where the problem times its held-out cases: the entry's one figure over them (the problem's rule "
        "over their medians), once its system test passed them. Never a case's own time.",
    )


class ExcludedRowOut(Model):
    user_name: str
    submission_id: int
    coverage: str


class StandingsOut(Model):
    leaderboard: str
    device: str
    final: bool
    frozen_at: datetime | None
    rows: tuple[StandingRowOut, ...]
    excluded: tuple[ExcludedRowOut, ...] = Field(description="Entries that failed a held-out case (final standings).")
