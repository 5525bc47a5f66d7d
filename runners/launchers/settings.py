"""Settings of the remote launchers (Modal, GitHub Actions): ``MODAL_*`` and ``GITHUB_*``.

Built by the composition root (``kernelcup.settings.load``, at the start of ``kernelcup worker``, ``bot`` and
``serve`` for the launchers that ``KERNELCUP_ROUTES`` uses) and handed to the launchers; never read at import or in a
launcher. Every wait a remote launcher makes is bounded by one of these numbers plus the request's own limits; the
defaults suit a cold start of a GPU container (Modal) and a self-hosted runner that may be busy with another job
(GitHub).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class ModalSettings(BaseSettings):
    """``MODAL_*``: where the deployed app lives and how long to wait for it.

    Credentials are Modal's own: ``MODAL_TOKEN_ID``/``MODAL_TOKEN_SECRET`` in the environment, or the
    profile that ``modal token new`` writes to ``~/.modal.toml``.
    """

    model_config = SettingsConfigDict(env_prefix="MODAL_", extra="ignore")

    app_name: str = Field(default="kernelcup-runners", description="The deployed Modal app (modal deploy).")
    environment: str | None = Field(default=None, description="Modal environment; None uses the profile's.")
    token_id: SecretStr | None = None
    token_secret: SecretStr | None = None
    startup_margin_s: float = Field(
        default=600.0, gt=0, description="Added to the function's own time limit: queueing, cold start, image pull."
    )
    poll_s: float = Field(default=20.0, gt=0, description="How long one wait for the result lasts before re-polling.")
    rpc_timeout_s: float = Field(default=60.0, gt=0, description="Bound on one lookup, spawn or cancel call.")
    check_timeout_s: float = Field(default=10.0, gt=0, description="Bound on `kernelcup runners check` per launcher.")


_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class GithubSettings(BaseSettings):
    """``GITHUB_*``: the repository whose dispatch workflow runs submissions on self-hosted runners."""

    model_config = SettingsConfigDict(env_prefix="GITHUB_", extra="ignore")

    token: SecretStr | None = Field(
        default=None, description="A token with actions:write (dispatch, cancel) and actions:read (runs, artifacts)."
    )
    repo: str | None = Field(default=None, description="owner/name of the repository that holds the workflow.")
    workflow: str = Field(default="kernelcup-run.yml", description="The workflow file under .github/workflows/.")
    ref: str = Field(default="main", description="The branch or tag the workflow (and the runner code) runs from.")
    api_url: str = Field(default="https://api.github.com", description="REST API root (GitHub Enterprise: /api/v3).")
    http_timeout_s: float = Field(default=15.0, gt=0, description="Bound on one HTTP request.")
    api_attempts: int = Field(default=4, ge=1, le=10, description="Tries of one API call on 5xx/rate-limit/network.")
    max_rate_limit_wait_s: float = Field(default=120.0, ge=0, description="Longest wait for a rate limit to reset.")
    find_run_timeout_s: float = Field(default=120.0, gt=0, description="How long to look for the dispatched run.")
    queue_timeout_s: float = Field(default=1800.0, gt=0, description="How long a run may wait for a free runner.")
    setup_margin_s: float = Field(
        default=600.0, gt=0, description="Added to the request's limits once running: checkout, venv, upload."
    )
    poll_min_s: float = Field(default=5.0, gt=0, description="First poll interval; grows by 1.5x per poll.")
    poll_max_s: float = Field(default=30.0, gt=0, description="Longest poll interval.")
    max_result_bytes: int = Field(default=32 * 1024 * 1024, gt=0, description="Cap on the result artifact (zip).")
    check_timeout_s: float = Field(default=10.0, gt=0, description="Bound on `kernelcup runners check`.")

    @field_validator("repo")
    @classmethod
    def _owner_name(cls, v: str | None) -> str | None:
        if v is not None and not _REPO.match(v):
            raise ValueError(f"expected owner/name, e.g. kernelcup/kernelcup, got {v!r}")
        return v


@dataclass(frozen=True)
class LauncherSettings:
    """The settings of the launcher kinds a router may build, by kind name (``registry.KINDS``): those of every kind
    a route uses, read at start; a kind no route uses has none (so a worker that routes nothing to Modal never
    reads ``MODAL_*``)."""

    by_kind: Mapping[str, BaseSettings] = field(default_factory=dict)
