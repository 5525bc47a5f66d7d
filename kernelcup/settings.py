"""The one settings loader: every settings model is built here, from the environment and an optional ``.env``.

The models live with their layers (``leaderboards/settings.py``, ``runners/settings.py``,
``runners/launchers/settings.py``, ``bot/settings.py``, ``web/settings.py``, ``WorkerSettings`` and
``RoutingSettings``); each declares only its fields and its prefix. This module is the only one that reads them
(``load``, called by the composition root ``kernelcup/wiring.py`` and the commands, never at import), and turns a
validation error into a ``SettingsError`` that names the environment variable to fix.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings

from runners.validation import error_message

S = TypeVar("S", bound=BaseSettings)

ENV_FILE = ".env"
"""Read (when present) from the working directory, after the environment itself."""


class SettingsError(Exception):
    """A missing or invalid setting; the message names the environment variable and the fix."""


def env_name(model: type[BaseSettings], field: str) -> str:
    """The environment variable behind ``field`` of ``model`` (its alias, or prefix + name)."""
    if field not in model.model_fields and field.upper() == field:  # already a variable's name (an alias)
        return field
    info = model.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    if isinstance(alias, str):
        return alias.upper()
    choices = getattr(alias, "choices", None)
    if choices and isinstance(choices[0], str):
        return choices[0].upper()
    prefix = model.model_config.get("env_prefix", "") or ""
    return f"{prefix}{field}".upper()


def load(model: type[S], **overrides: Any) -> S:
    """Build a settings model from the environment and ``.env`` (``overrides`` win), or raise ``SettingsError``
    naming each bad variable."""
    sources: dict[str, Any] = {"_env_file": ENV_FILE, "_env_file_encoding": "utf-8"}
    try:
        return model(**{**sources, **overrides})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else ""
            what = "is required but not set" if err["type"] == "missing" else f"is invalid: {error_message(err)}"
            lines.append(f"setting {env_name(model, field)} {what}" if field else f"settings: {error_message(err)}")
        raise SettingsError(
            "; ".join(lines) + " (set it in the environment or in .env; see docs/settings.md)"
        ) from None
