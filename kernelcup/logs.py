"""Logging for the services (``worker``, ``bot``, ``serve``): Rich on a terminal, JSON lines otherwise.

``KERNELCUP_LOG_FORMAT`` picks ``rich`` or ``json``; unset (``auto``), a terminal on stderr gets Rich and anything
else (a container's log collector, a pipe, a file) gets one JSON object per line, never wrapped. ``LOG_LEVEL``
sets the level (``-v`` means DEBUG). Standard-library logging only; set up once per command, in its body.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from kernelcup.settings import load

QUIET_LOGGERS = ("sqlalchemy", "alembic", "httpx", "urllib3")
"""Libraries whose INFO lines are noise for an operator: WARNING and above only (unless LOG_LEVEL=DEBUG)."""


class LogSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    log_level: str = Field(
        default="INFO",
        validation_alias=AliasChoices("LOG_LEVEL", "KERNELCUP_LOG_LEVEL"),
        description="DEBUG, INFO, WARNING, ERROR or CRITICAL.",
    )
    log_format: Literal["auto", "rich", "json"] = Field(
        default="auto",
        validation_alias="KERNELCUP_LOG_FORMAT",
        description="auto: Rich on a terminal, JSON lines otherwise.",
    )

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, v: str) -> str:
        name = v.strip().upper()
        if name not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError(f"{v!r} is not a level; use DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return name


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line: time (UTC, ISO 8601), level, logger, message, and the traceback
    as a string when there is one (newlines inside stay escaped, so a collector sees one event)."""

    def format(self, record: logging.LogRecord) -> str:
        event = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return json.dumps(event, ensure_ascii=False, default=str)


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes (a test runner or a daemon may swap it)."""

    @property  # type: ignore[override]
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, _value: IO[str]) -> None:
        pass


def setup_logging(verbose: bool = False, *, stream: IO[str] | None = None) -> None:
    """Configure the root logger from ``LogSettings`` (``verbose``: DEBUG whatever LOG_LEVEL says); the records go
    to ``stream``, by default to stderr."""
    settings = load(LogSettings)
    level = logging.DEBUG if verbose else logging.getLevelName(settings.log_level)
    terminal = _is_terminal(stream or sys.stderr)
    use_rich = settings.log_format == "rich" or (settings.log_format == "auto" and terminal)
    handler: logging.Handler
    if use_rich:
        from rich.console import Console
        from rich.logging import RichHandler

        console = Console(file=stream) if stream is not None else Console(stderr=True)
        handler = RichHandler(console=console, show_path=False, rich_tracebacks=False)
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = logging.StreamHandler(stream) if stream is not None else _CurrentStderr()
        handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    for noisy in QUIET_LOGGERS:
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def _is_terminal(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
