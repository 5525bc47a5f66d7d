"""Building requests for the fixture problems (imported by the harness tests and their conftest)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from leaderboards.problems import load_problem
from runners.contract import Limits, Mode, RunRequest, RunResult, TimingSettings

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS.parent / "fixtures" / "problems"
SUBMISSIONS = TESTS / "submissions"
CHEATS = TESTS / "cheats"

# Short timing so CPU tests stay fast; the defaults are what real runs use.
QUICK_TIMING = TimingSettings(warmup_ms=5, warmup_min_calls=2, min_samples=5, max_samples=40, max_time_s=0.3)

Evaluate = Callable[..., RunResult]


def build_request(
    submission: Path | str,
    mode: Mode = Mode.TEST,
    *,
    problem: str = "vectoradd",
    device: str = "cpu",
    seed: int | None = None,
    name: str | None = None,
    content: bytes | None = None,
    timing: TimingSettings | None = QUICK_TIMING,
    **limits: Any,
) -> RunRequest:
    """A request for a fixture problem; ``submission`` is a file under tests/runners/ or a path."""
    path = Path(submission)
    if not path.is_absolute():
        path = TESTS / path
    data = content if content is not None else path.read_bytes()
    if mode is Mode.RANKED and seed is None:
        seed = 20261122
    request = load_problem(FIXTURES / problem).request(
        name or path.name,
        data,
        mode,
        device=device,
        device_name=device,
        seed=seed,
        limits=Limits(**limits) if limits else None,
    )
    if limits.get("run_timeout_s"):  # Problem.request sets the run timeout from task.yml; a test may want less
        request.limits.run_timeout_s = limits["run_timeout_s"]
    if timing is not None:
        request.timing = timing
    return request
