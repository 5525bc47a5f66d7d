"""`kernelcup submit` refuses a file over the size limit by its size, before reading it."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelcup.cli import build_app

SIZE = 256 * 1024 * 1024  # a sparse file: no disk used, but reading it would take 256 MiB of memory


def test_an_oversized_file_is_refused_without_being_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KERNELCUP_MAX_SUBMISSION_BYTES", "4096")
    big = tmp_path / "big.py"
    with big.open("wb") as f:
        f.truncate(SIZE)
    app = build_app()
    tracemalloc.start()
    try:
        result = CliRunner().invoke(app, ["submit", str(big), "-l", "add", "--user", "ann"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 1
    assert "big.py is 262,144 KiB; the limit is 4,096 bytes." in result.output
    assert peak < SIZE // 8, f"{peak / 2**20:.0f} MiB allocated: the file was read"
    assert os.stat(big).st_size == SIZE
