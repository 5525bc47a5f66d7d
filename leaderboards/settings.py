"""Settings of the core: where the database is, and the submission rules that are not per leaderboard.

Read from the environment (prefix ``KERNELCUP_``, except ``DATABASE_URL``) and an optional ``.env``; built by the
composition root (``kernelcup.settings.load(CoreSettings)``) and passed down, never read at import.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class CoreSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELCUP_", extra="ignore", env_parse_none_str="none")

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "KERNELCUP_DATABASE_URL"),
        description="SQLAlchemy URL, e.g. postgresql+psycopg2://user@host/db; unset: SQLite in the data dir.",
    )
    data_dir: Path | None = Field(
        default=None, description="Where the embedded SQLite database lives; unset: the user's data directory."
    )
    db_echo: bool = Field(default=False, description="Log every SQL statement (debugging).")
    max_submission_bytes: int = Field(default=1024 * 1024, gt=0, description="Largest accepted submission file.")
    check_python_syntax: bool = Field(
        default=True,
        description="Refuse a .py file that this service's Python cannot compile when it is sent, before anything is "
        "stored or queued (no GPU spent on a file that cannot be imported). It is this process's Python that judges: "
        "3.12 in the image, as on the Modal runners; turn it off where the runners run a newer Python than the "
        "service (syntax only the newer one accepts would be refused).",
    )
    rate_limit_per_hour: int | None = Field(
        default=30,
        ge=1,
        description="Test, benchmark and profile submissions per user per leaderboard per hour where a leaderboard "
        "sets no limit of its own ('none': no limit).",
    )
    ranked_rate_limit_per_hour: int | None = Field(
        default=10,
        ge=1,
        description="Ranked submissions per user per leaderboard per hour where a leaderboard sets no limit of its "
        "own ('none': no limit).",
    )
    max_new_files_per_day: int | None = Field(
        default=100,
        ge=1,
        description="Different files (by content) one user may store in 24 hours, across leaderboards; resubmitting "
        "a stored file does not count ('none': no cap).",
    )
    duplicate_window_s: float = Field(
        default=600.0,
        ge=0,
        description="A submission of the same file by the same user to the same leaderboard, mode and devices within "
        "this many seconds answers with the earlier one instead of running it again (0: never).",
    )
    compile_budget_s: float = Field(
        default=120.0,
        gt=0,
        description="Time for the compile step of native CUDA problems, taken out of the leaderboard's time limit "
        "(Python submissions have no separate compile step).",
    )
    max_attempts: int = Field(default=3, ge=1, description="Tries of a job before an infrastructure failure sticks.")
    announce_top: int = Field(default=3, ge=1, description="Rank changes into this top-N are recorded to announce.")
    max_pending_jobs_per_user: int = Field(
        default=50, ge=1, description="Queued or running jobs one user may have at once."
    )
    program_rate_limit_per_hour: int | None = Field(
        default=120,
        ge=1,
        description="Submissions per program account per leaderboard per hour (instead of the people's limit); "
        "unset: no limit.",
    )
    program_max_pending_jobs: int = Field(
        default=20, ge=1, description="Queued or running jobs one program account may have at once."
    )
    batch_max_candidates: int = Field(
        default=64,
        ge=1,
        le=1000,
        description="The most candidates one batch (POST /api/v1/batches) may hold; a batch may fill the pending-job "
        "quota up to this many runs.",
    )
    idempotency_ttl_s: float = Field(
        default=86_400.0,
        gt=0,
        description="How long an Idempotency-Key of a submitting request is kept (its retries get the first answer).",
    )
    rankings_show_programs: bool = Field(
        default=True, description="Whether rankings list program accounts' entries unless a reader asks otherwise."
    )
    token_expiry_days: int | None = Field(
        default=90, ge=1, description="Lifetime of a new API token unless its creator gives one; unset: no expiry."
    )
    max_tokens_per_user: int | None = Field(
        default=100,
        ge=1,
        description="Live (not revoked, not expired) API tokens one account may have; a new one beyond is refused "
        "until some are revoked ('none': no cap).",
    )

    late_submissions_per_hour: int = Field(
        default=10,
        ge=0,
        description="Submissions per user per leaderboard per hour after its deadline, where they run as unranked "
        "practice (every mode counts; 0: nothing is accepted after a deadline).",
    )
    invite_failures_per_hour: int = Field(
        default=10,
        ge=1,
        description="Joins with a code that let nobody in (unknown, expired, used up) one user may make per hour, "
        "across leaderboards, before joining is refused for the rest of the hour (bounds guessing codes).",
    )

    screen_command: str | None = Field(
        default=None,
        description="A screening hook (leaderboards/screening.py): a command, split like a shell line, that reads a "
        "submission as JSON on stdin before it is queued and answers {\"verdict\": \"pass\"|\"flag\"|\"refuse\", "
        "\"reason\": ...} on stdout. Unset: no command.",
    )
    screen_url: str | None = Field(
        default=None,
        description="A screening hook over HTTP: the submission is POSTed there as JSON and the answer is the same "
        "JSON as the command's. Unset: no endpoint (with both set, the command runs).",
    )
    screen_timeout_s: float = Field(
        default=10.0, gt=0, le=120, description="How long the screening hook may take before it counts as failed."
    )
    screen_fail_closed: bool = Field(
        default=False,
        description="When the screening hook fails or times out: refuse the submission (true) instead of queueing "
        "it flagged for a moderator (false, the default: a failing hook never loses a submission).",
    )
    retime_top: int = Field(
        default=10,
        ge=0,
        le=1000,
        description="When a device's runs report a new runtime (driver, CUDA, torch, Triton, nvcc, GPU), re-time "
        "this many of the best entries of each leaderboard on it (0: none).",
    )
    deadline_retime_rounds: int = Field(
        default=0,
        ge=0,
        le=50,
        description="At a leaderboard's deadline, after its system tests, re-time each device's finalists side by "
        "side in this many interleaved rounds, spread over the live workers serving the device, and rank the final "
        "standings by them (0, the default: no re-timing; docs/competitions.md).",
    )
    hack_units_per_day: int = Field(
        default=10,
        ge=0,
        description="Input hacks (issue 35) one account may spend in 24 hours, across leaderboards: every hack "
        "costs one; a confirmed break that quarantines an entry refunds it (once per case without its seed; a "
        "moderator's clear withdraws the refund); one the runner failed costs none, 3 a day (0: no hacks).",
    )
    hack_top: int = Field(
        default=10,
        ge=1,
        le=50,
        description="How many of each device's top entries (of other accounts) an input hack runs against.",
    )

    def resolved_database_url(self) -> str:
        """``DATABASE_URL``, or the embedded SQLite file in the data directory."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.embedded_database_path()}"

    def embedded_database_path(self) -> Path:
        """The embedded SQLite file, used when ``DATABASE_URL`` is unset."""
        return self.resolved_data_dir() / "kernelcup.sqlite3"

    def ensure_data_dir(self) -> Path:
        """The data dir, made (with its parents) if missing: the new folder readable by this user only (0700), as
        what it holds is private (the database, with every board's secret seed and all code; the web secret)."""
        path = self.resolved_data_dir()
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    def resolved_data_dir(self) -> Path:
        if self.data_dir is not None:
            return self.data_dir.expanduser()
        from platformdirs import user_data_path

        return user_data_path("kernelcup", appauthor=False)
