"""Settings: one pydantic-settings model per layer, read from the environment and an optional ``.env``.

The models live with their layers (``leaderboards/settings.py``, ``runners/settings.py``,
``bot/settings.py``); this module only loads them and turns a validation error into a message that
names the environment variable to fix. Call ``load`` inside a command, never at import.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

S = TypeVar("S", bound=BaseSettings)

ENV_FILE = ".env"


def layer_config(prefix: str = "") -> SettingsConfigDict:
    """The shared settings config: environment first, then ``.env`` in the working directory."""
    return SettingsConfigDict(env_prefix=prefix, env_file=ENV_FILE, env_file_encoding="utf-8", extra="ignore")


class SettingsError(Exception):
    """A missing or invalid setting; the message names the environment variable and the fix."""


def env_name(model: type[BaseSettings], field: str) -> str:
    if field not in model.model_fields and field.upper() == field:  # already a variable's name (an alias)
        return field
    info = model.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    if isinstance(alias, str):
        return alias.upper()
    prefix = model.model_config.get("env_prefix", "") or ""
    return f"{prefix}{field}".upper()


def load(model: type[S], **overrides: object) -> S:
    """Build a settings model, or raise ``SettingsError`` naming each bad variable."""
    try:
        return model(**overrides)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else ""
            ctx = err.get("ctx", {})
            msg = str(ctx["error"]) if err["type"] == "value_error" and "error" in ctx else err["msg"]
            what = "is required but not set" if err["type"] == "missing" else f"is invalid: {msg}"
            lines.append(f"setting {env_name(model, field)} {what}")
        raise SettingsError(
            "; ".join(lines) + " (set it in the environment or in .env; see README 'Settings')"
        ) from None
