"""Settings of the HTTP API (``KERNELCUP_API_*``): read by ``kernelcup serve``, passed to ``create_app``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class WebSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELCUP_API_", extra="ignore")

    public_url: str | None = Field(
        default=None,
        description="The URL people reach the API at (behind a proxy); unset: taken from each request.",
    )
    workers: int = Field(default=1, ge=1, le=64, description="uvicorn worker processes of `kernelcup serve`.")
    worker_hang_s: float = Field(
        default=60.0,
        ge=5,
        le=3600,
        description="With several worker processes: how long one may leave its health checks unanswered before it "
        "is replaced (a slow answer on a busy machine is not a dead process; an exited one is replaced at once).",
    )
    problems_dir: Path = Field(
        default=Path("problems"), description="The problems folder; admin sync and create only read paths inside it."
    )
    problem_set: str = Field(default="starter.yaml", description="The problem set admin sync uses by default.")
    sse_poll_s: float = Field(default=0.5, gt=0, description="How often an event stream looks for progress.")
    sse_keepalive_s: float = Field(default=15.0, gt=0, description="Comment line sent on an idle event stream.")
    sse_timeout_s: float = Field(default=6 * 3600.0, gt=0, description="Longest life of one event stream.")
    sse_auth_check_s: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description="How often an open event stream checks its token (or page session) again: a revoked token's, or a "
        "signed-out session's, streams end within this.",
    )
    sse_max_per_user: int = Field(
        default=10, ge=1, description="Event streams one account may have open at once (per API process)."
    )
    sse_max_streams: int = Field(
        default=200, ge=1, description="Event streams open at once in all (per API process); each polls the database."
    )
    max_rankings_limit: int = Field(
        default=1000, ge=1, le=100_000, description="Most ranking rows one request may ask for."
    )
    rankings_cache_s: float = Field(
        default=1.0, ge=0, description="How long a ranking page is served from memory (0: never cached)."
    )
    max_body_bytes: int = Field(
        default=1024 * 1024, gt=0, description="Largest request body other than a submission upload."
    )

    # -- the web pages (docs/web.md) -------------------------------------------------------------------------------
    session_secret: SecretStr | None = Field(
        default=None,
        description="Signs the pages' session cookies; unset: generated once and kept in the data dir (web-secret).",
    )
    session_max_age_s: int = Field(default=14 * 24 * 3600, gt=0, description="How long a page sign-in lasts.")
    ranking_page_size: int = Field(default=100, ge=1, le=1000, description="Ranking rows per leaderboard page.")
    discord_client_id: str | None = Field(default=None, description="Discord OAuth2 app: 'Sign in with Discord'.")
    discord_client_secret: SecretStr | None = Field(default=None, description="Discord OAuth2 app's secret.")
    discord_base_url: str = Field(default="https://discord.com", description="Where Discord's OAuth2 endpoints are.")
