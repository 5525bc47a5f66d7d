"""Fixtures for the harness tests: requests for the fixture problems, and one call that evaluates them.

Requests are built the way every surface builds them (``load_problem(...).request(...)``, see
``harness_helpers``) and evaluated through ``runners.entry.run_request``, the one path workers and
``kernelcup run`` take. On the CPU (``device="cpu"``) everything runs without a GPU: PyTorch on the CPU,
Triton through its interpreter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness_helpers import QUICK_TIMING, Evaluate, build_request

from leaderboards.problems import Problem
from runners.contract import Mode, RunRequest, RunResult
from runners.entry import run_request
from runners.settings import RunnerSettings


@pytest.fixture
def runner_settings(tmp_path: Path) -> RunnerSettings:
    return RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True)


@pytest.fixture
def evaluate(runner_settings: RunnerSettings) -> Evaluate:
    """``evaluate(submission, mode, **request_options)`` -> RunResult, through ``run_request``."""

    def run(submission: Path | str, mode: Mode = Mode.TEST, **options: Any) -> RunResult:
        return run_request(build_request(submission, mode, **options), settings=runner_settings)

    return run


@pytest.fixture
def quick_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request a surface builds in this process (``Problem.request``: the CLI's, a worker's) times its benchmark
    cases with ``QUICK_TIMING``, as ``build_request``'s do, instead of the 2 s a case of real runs: for a test of a
    surface (``kernelcup run --compare``) whose claims do not need long sampling. The run is otherwise the one the
    surface makes."""
    build = Problem.request

    def quick(self: Problem, *args: Any, **kwargs: Any) -> RunRequest:
        request = build(self, *args, **kwargs)
        request.timing = QUICK_TIMING
        return request

    monkeypatch.setattr(Problem, "request", quick)
