"""What the database-backed commands share: opening the service, showing errors, JSON and time formatting.

Imported by every command module when the CLI is built, so it imports only the standard library and Typer at its
top: the database layer, pydantic and the core are imported inside the functions that use them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from sqlalchemy.exc import DBAPIError

    from leaderboards.service import LeaderboardService
    from leaderboards.settings import CoreSettings


def core_settings() -> CoreSettings:
    from kernelcup.settings import load
    from leaderboards.settings import CoreSettings

    return load(CoreSettings)


def open_service(settings: CoreSettings | None = None) -> LeaderboardService:
    """The service on the configured database (the embedded SQLite one is created and migrated on first use)."""
    from kernelcup.wiring import open_platform  # the one place the platform is put together

    return open_platform(settings).service


@contextmanager
def user_errors() -> Iterator[None]:
    """Show a core, settings, launcher, problem-format or API error as one message on stderr and exit with status 1:
    the known ways a command fails on its input or its configuration (a bug still shows its traceback)."""
    from sqlalchemy.exc import DBAPIError

    from kernelcup.client import ApiError
    from kernelcup.settings import SettingsError
    from leaderboards.errors import KernelcupError
    from leaderboards.formatting import printable
    from runners.launchers.base import LauncherError

    try:
        yield
    except (KernelcupError, SettingsError, LauncherError) as exc:  # messages may quote names users chose
        typer.secho(f"error: {printable(str(exc))}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    except ApiError as exc:  # the server's answer, shown as it is (it says how to get a token), and how to log in
        hint = ""
        if exc.code == "invalid_token":
            hint = " (then log in with `kernelcup login --server URL`)"
        typer.secho(f"error: {printable(exc.message)}{hint}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    except DBAPIError as exc:  # one line, never a traceback with SQL and its parameters
        typer.secho(f"error: {database_error(exc)}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None


def database_error(exc: DBAPIError) -> str:
    """A database error in one line, without the statement or its bound parameters."""
    from sqlalchemy.exc import OperationalError

    reason = " ".join(str(exc.orig or type(exc).__name__).split())[:300]
    if isinstance(exc, OperationalError):
        return f"the database could not be reached ({reason}); check DATABASE_URL and that the server is up"
    return f"the database refused the operation ({type(exc.orig).__name__}: {reason})"


def read_submission(path: Path, limit: int) -> bytes:
    """A submission file's bytes, refused by its size before it is read (and never more than ``limit`` + 1 bytes
    read, should it grow meanwhile); only regular files."""
    from leaderboards.errors import FileTooLarge

    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file", param_hint="FILE")
    size = path.stat().st_size
    if size > limit:
        raise FileTooLarge(path.name, size, limit)
    with path.open("rb") as f:
        content = f.read(limit + 1)
    if len(content) > limit:
        raise FileTooLarge(path.name, len(content), limit)
    return content


def jsonable(obj: Any) -> Any:
    """Plain JSON values from result dataclasses, pydantic models, datetimes, enums and paths."""
    from pydantic import BaseModel

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, datetime):
        return obj.isoformat()
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [jsonable(v) for v in obj]
    if isinstance(obj, bytes):
        return obj.decode("utf-8", errors="replace")
    return obj


def print_json(obj: Any) -> None:
    json.dump(jsonable(obj), sys.stdout, indent=2)
    sys.stdout.write("\n")


def format_time(t: datetime | None) -> str:
    return "-" if t is None else f"{t:%Y-%m-%d %H:%M} UTC"


def shell_actor(command: str) -> str:
    """Who runs an admin command on the local database, for the audit log: the shell user and the command
    (``shell:ann (kernelcup admin pause)``)."""
    import getpass
    import os

    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        who = f"uid {os.getuid()}"
    return f"shell:{who} (kernelcup {command})"


REPORT_WIDTH = 160
"""The width of a report written to a file or a pipe (no terminal, and no ``COLUMNS``)."""


def report_console() -> Console:
    """A rich console for a command's report on stdout: the terminal's width on a terminal; into a file or a pipe
    ``REPORT_WIDTH`` columns unless ``COLUMNS`` says otherwise, so that a table's rows stay rows (rich's default there,
    80, wrapped a benchmark row's note one word per line; newcomer's walk, 2026-11-29)."""
    from rich.console import Console

    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else REPORT_WIDTH
    return Console(width=width)
