"""`kernelcup runners` commands."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app (filled in by the runners work)."""
