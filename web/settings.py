"""Settings of the HTTP API (``KERNELCUP_API_*``): read by ``kernelcup serve``, passed to ``create_app``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

SignInProvider = Literal["discord", "github"]
PROVIDERS: tuple[SignInProvider, ...] = get_args(SignInProvider)
PROVIDER_TITLES: dict[SignInProvider, str] = {"discord": "Discord", "github": "GitHub"}


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

    # -- signing in (docs/deploy.md, "Sign-in"; docs/web.md) -------------------------------------------------------
    sign_in_providers: Annotated[list[SignInProvider] | None, NoDecode] = Field(
        default=None,
        description="Which 'Sign in with ...' buttons the pages offer, comma-separated: discord, github (empty: "
        "none, pasted API tokens only). Unset: every provider whose client id and secret are set. A provider named "
        "here without its client id and secret stops `kernelcup serve` at start, naming the missing setting.",
    )
    discord_client_id: str | None = Field(
        default=None, description="Discord OAuth2 application's client id: 'Sign in with Discord' (scope identify)."
    )
    discord_client_secret: SecretStr | None = Field(default=None, description="Discord OAuth2 application's secret.")
    discord_base_url: str = Field(default="https://discord.com", description="Where Discord's OAuth2 endpoints are.")
    github_client_id: str | None = Field(
        default=None, description="GitHub OAuth app's client id: 'Sign in with GitHub' (no scope: public profile)."
    )
    github_client_secret: SecretStr | None = Field(default=None, description="GitHub OAuth app's client secret.")
    github_base_url: str = Field(
        default="https://github.com", description="Where GitHub's OAuth endpoints are (GitHub Enterprise: its URL)."
    )
    github_api_url: str = Field(
        default="https://api.github.com",
        description="GitHub's REST API, which names the signed-in user (GitHub Enterprise: https://HOST/api/v3).",
    )
    cli_sign_in_code_s: int = Field(
        default=120,
        ge=30,
        le=900,
        description="How long the one-time code of a browser sign-in for the CLI (`kernelcup login --server URL`) "
        "may wait to be exchanged for a token.",
    )

    @field_validator("sign_in_providers", mode="before")
    @classmethod
    def _providers(cls, value: object) -> object:
        """``discord,github`` (the environment's form) as a list; an empty string is no provider."""
        if isinstance(value, str):
            return [p.strip().lower() for p in value.split(",") if p.strip()]
        return value

    @model_validator(mode="after")
    def _providers_configured(self) -> WebSettings:
        for provider in self.sign_in_providers or ():
            if not getattr(self, f"{provider}_client_id") or getattr(self, f"{provider}_client_secret") is None:
                raise ValueError(
                    f"sign_in_providers names {provider}, but KERNELCUP_API_{provider.upper()}_CLIENT_ID and "
                    f"KERNELCUP_API_{provider.upper()}_CLIENT_SECRET are not both set: set them (docs/deploy.md, "
                    f"'Sign-in'), or leave {provider} out of KERNELCUP_API_SIGN_IN_PROVIDERS"
                )
        return self

    def enabled_providers(self) -> tuple[SignInProvider, ...]:
        """The providers whose sign-in the pages offer, in a fixed order."""
        if self.sign_in_providers is not None:
            return tuple(p for p in PROVIDERS if p in self.sign_in_providers)
        return tuple(
            p for p in PROVIDERS if getattr(self, f"{p}_client_id") and getattr(self, f"{p}_client_secret") is not None
        )
