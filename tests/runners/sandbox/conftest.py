"""Fixtures for the sandbox tests: run a snippet of Python in the sandbox with small limits."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runners.sandbox import ProcessOutcome, SandboxSpec, probe_sandbox, run_sandboxed


@pytest.fixture
def jobdir(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    job.mkdir()
    return job


def make_spec(jobdir: Path, code: str, **overrides: Any) -> SandboxSpec:
    fields: dict[str, Any] = {
        "argv": [sys.executable, "-c", textwrap.dedent(code)],
        "workdir": jobdir,
        "env": {},
        "timeout_s": 10.0,
        "output_cap_bytes": 4096,
        "memory_mb": 512,
        "allow_gpu": False,
    }
    fields.update(overrides)
    return SandboxSpec(**fields)


@pytest.fixture
def run_py(jobdir: Path) -> Callable[..., ProcessOutcome]:
    """run_py(code, **spec_overrides) -> ProcessOutcome, with the job directory of this test."""

    def run(code: str, **overrides: Any) -> ProcessOutcome:
        return run_sandboxed(make_spec(jobdir, code, **overrides))

    return run


@pytest.fixture
def sandboxed() -> None:
    """Skip unless bubblewrap can run here (the isolation tests mean nothing without it)."""
    bwrap, _hardened, note = probe_sandbox()
    if bwrap is None:
        pytest.skip(f"no sandbox on this machine: {note}")


@pytest.fixture
def spec_for(jobdir: Path) -> Callable[..., SandboxSpec]:
    """spec_for(code, **overrides) -> SandboxSpec in this test's job directory."""
    return lambda code, **overrides: make_spec(jobdir, code, **overrides)
