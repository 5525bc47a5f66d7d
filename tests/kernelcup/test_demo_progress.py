"""`kernelcup demo`'s output off a terminal (a newcomer's walk, 2026-11-29).

Piped (as in CI, or `make demo | tee`), the demo printed nothing for minutes: its progress was a rich spinner, which
prints nothing when the output is not a terminal, and each solution's verdict came only after all had finished. Now
each solution's line comes as it finishes. And its CPU scores, all about the same few ms, say what they mostly are:
the evaluator's own cost per call (runners/oracle/window.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import write_problem, write_problem_set
from typer.testing import CliRunner

from kernelcup import wiring
from kernelcup.cli import build_app
from runners.contract import RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

SOLUTION = "def custom_kernel(data):\n    return data\n"


@pytest.fixture(autouse=True)
def _no_log_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    monkeypatch.setattr(logging.getLogger(), "handlers", [])


@pytest.fixture
def env(env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The package's clean command environment (tests/kernelcup/conftest.py), with a worker that polls quickly."""
    monkeypatch.setenv("KERNELCUP_WORKER_POLL_S", "0.02")
    monkeypatch.setenv("KERNELCUP_WORKER_HEARTBEAT_S", "0.5")
    return env


def test_off_a_terminal_each_solutions_line_comes_as_it_finishes(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = env / "problems"
    for name in ("add", "scale"):
        write_problem(root, name)
        (root / name / "solutions" / "correct").mkdir(parents=True)
        (root / name / "solutions" / "correct" / "pytorch.py").write_text(SOLUTION)
    entries = [{"directory": d, "deadline": "2099-01-01", "devices": ["cpu"]} for d in ("add", "scale")]
    set_file = write_problem_set(root, entries, name="starter")

    seen: dict[str, str] = {}

    def respond(request: RunRequest) -> RunResult:
        """What the demo had printed when each run started (CliRunner's stdout is not a terminal)."""
        sys.stdout.flush()
        seen.setdefault(request.problem, " ".join(sys.stdout.buffer.getvalue().decode().split()))  # type: ignore[attr-defined,union-attr]
        return accepted_result(request)

    launcher = FakeLauncher(respond)
    monkeypatch.setattr(wiring, "launcher_for", lambda kind="routed", **_: lambda device: launcher)
    result = CliRunner().invoke(build_app(), ["demo", "--set", str(set_file)])
    assert result.exit_code == 0, result.output

    first, second = sorted(seen.values(), key=len)  # one worker slot: one run after the other
    assert "running them (a line as each finishes)" in first and "-> accepted" not in first
    assert second.count("/pytorch.py -> accepted") == 1  # the first solution's line, before the second ran
    assert result.output.count("/pytorch.py -> accepted") == 2  # each once
    text = " ".join(result.output.split())
    assert "note: on a CPU these scores are mostly the evaluator's own cost per call" in text
    assert "runners/oracle/window.py" in text
