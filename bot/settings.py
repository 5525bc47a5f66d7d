"""The bot's settings: read from the environment (or ``.env``) by ``kernelcup bot``, passed down from there.

Only ``DISCORD_TOKEN`` is required. Everything else has a default that works for a small server.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings

from kernelcup.settings import layer_config


class BotSettings(BaseSettings):
    """``DISCORD_*`` settings of the Discord bot."""

    model_config = layer_config("DISCORD_")

    token: SecretStr = Field(description="The bot token from the Discord developer portal (DISCORD_TOKEN).")
    guild_id: int | None = Field(
        default=None,
        description="Sync the commands to this server only (instant); unset: global sync (can take up to an hour).",
    )
    admin_role: str = Field(
        default="kernelcup-admin",
        min_length=1,
        description="Name or id of the role whose members may use /admin.",
    )
    announce_channel_id: int | None = Field(
        default=None, description="Channel for 'new #1 / top 3' announcements; unset: no announcements."
    )
    announce_interval_s: float = Field(default=30.0, gt=0, description="How often to look for rank changes.")
    status_interval_s: float = Field(
        default=3.0,
        ge=1.0,
        description="Seconds between two edits of a live status message (Discord rate-limits edits).",
    )
    follow_timeout_s: float = Field(
        default=6 * 3600.0,
        gt=0,
        description="Stop following a submission after this long; /leaderboard submission ID still shows it.",
    )
    device_peaks: dict[str, str] = Field(
        default_factory=dict,
        description='Peaks for speed of light, JSON: {"H100": "3.35e12,989e12"} (bytes/s[,FLOP/s]); '
        "datasheet bandwidths of common GPUs are built in.",
    )
    problems_dir: Path = Field(
        default=Path("problems"),
        description="The problems folder; /admin sync and /admin create only read paths inside it.",
    )
    problem_set: str = Field(default="starter.yaml", description="The problem set /admin sync uses by default.")
    leaderboard_rows: int = Field(default=10, ge=1, le=25, description="Rows per device in /leaderboard show.")
    api_url: str | None = Field(
        default=None, description="The HTTP API's public URL, shown with /token (e.g. https://kernelcup.example.org)."
    )

    @field_validator("device_peaks")
    @classmethod
    def _peaks_parse(cls, value: dict[str, str]) -> dict[str, str]:
        from bot.peaks import parse_peaks

        parse_peaks(value)  # a ValueError names the device and the expected form
        return value
