"""Shared fixtures of the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean command environment: no database, routes or log format from outside, no stray .env, and the
    embedded database in a temporary data directory. Returns the working directory."""
    for var in ("DATABASE_URL", "KERNELCUP_DATABASE_URL", "KERNELCUP_ROUTES", "KERNELCUP_LOG_FORMAT", "LOG_LEVEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    return tmp_path
