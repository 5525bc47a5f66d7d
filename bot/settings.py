"""The bot's settings: built from the environment (or ``.env``) by ``kernelcup bot``, passed down from there.

Required: ``DISCORD_TOKEN``, the servers the bot serves (``DISCORD_GUILD_IDS``) and the admin roles
(``DISCORD_ADMIN_ROLE_IDS``), both by id: a server or a role name is something anyone can copy on a server
of their own. Everything else has a default that works for a small server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

IdList = Annotated[list[int], NoDecode]
"""Discord ids, written in the environment as ``123,456`` (or one id)."""


def _ids(value: Any, what: str, setting: str, legacy: str = "") -> Any:
    """Comma-separated ids from the environment; a name is refused with what to write instead."""
    if isinstance(value, int):
        return [value]
    if not isinstance(value, str):
        return value
    ids = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        if not part.isdigit():
            was = f" ({legacy}, which took a name, is read as {setting} now)" if legacy else ""
            raise ValueError(
                f"{part!r} is not a {what} id{was}. {what.capitalize()}s are given by id, never by name (anyone "
                f"can make a {what} with that name on a server of their own): in Discord, turn on Developer Mode "
                f"(User Settings -> Advanced), right-click the {what}, 'Copy {what.capitalize()} ID', and set "
                f"{setting}=<that id>"
            )
        ids.append(int(part))
    return ids


class BotSettings(BaseSettings):
    """``DISCORD_*`` settings of the Discord bot."""

    model_config = SettingsConfigDict(env_prefix="DISCORD_", extra="ignore", populate_by_name=True)

    token: SecretStr = Field(description="The bot token from the Discord developer portal (DISCORD_TOKEN).")
    guild_ids: IdList = Field(
        min_length=1,
        validation_alias=AliasChoices("DISCORD_GUILD_IDS", "DISCORD_GUILD_ID"),
        description="The servers the bot serves, by id: commands are synced to these only, and it leaves any other.",
    )
    admin_role_ids: IdList = Field(
        min_length=1,
        validation_alias=AliasChoices("DISCORD_ADMIN_ROLE_IDS", "DISCORD_ADMIN_ROLE"),
        description="Roles (by id, in the servers above) whose members may use /admin.",
    )
    submit_channel_ids: IdList = Field(
        default_factory=list,
        description="Channels where /leaderboard submit works; empty: any channel of the servers above.",
    )
    private_threads: bool = Field(
        default=False,
        description="Give each submission a private thread (its author and the admins) for its report and logs; "
        "off: the author gets them as a message only they can see.",
    )
    submits_per_minute: int = Field(
        default=4, ge=0, description="/leaderboard submit commands per user per minute; 0: no cooldown."
    )
    commands_per_minute: int = Field(
        default=20, ge=0, description="Other /leaderboard commands per user per minute (each command); 0: none."
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
    problems_dir: Path = Field(
        default=Path("problems"),
        description="The problems folder; /admin sync and /admin create only read paths inside it.",
    )
    problem_set: str = Field(default="starter.yaml", description="The problem set /admin sync uses by default.")
    leaderboard_rows: int = Field(default=10, ge=1, le=25, description="Rows per device in /leaderboard show.")
    api_url: str | None = Field(
        default=None, description="The HTTP API's public URL, shown with /token (e.g. https://kernelcup.example.org)."
    )

    @field_validator("guild_ids", mode="before")
    @classmethod
    def _guild_ids(cls, value: Any) -> Any:
        return _ids(value, "server", "DISCORD_GUILD_IDS")

    @field_validator("admin_role_ids", mode="before")
    @classmethod
    def _role_ids(cls, value: Any) -> Any:
        return _ids(value, "role", "DISCORD_ADMIN_ROLE_IDS", legacy="DISCORD_ADMIN_ROLE")

    @field_validator("submit_channel_ids", mode="before")
    @classmethod
    def _channel_ids(cls, value: Any) -> Any:
        return _ids(value, "channel", "DISCORD_SUBMIT_CHANNEL_IDS")
