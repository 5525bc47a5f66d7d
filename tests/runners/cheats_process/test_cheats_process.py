"""Process-level cheats: forging the result channel through stdout, file descriptors or files, exiting early
after a forged report, closing the channel, signalling the runner. Each must be rejected or scored honestly
(never accepted). Each file in cheats/ says the verdicts it may get in its first line (``# expect: a|b``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from leaderboards.problems import load_problem
from runners.contract import Limits, Mode, RunRequest, RunResult, SubmissionFile, Verdict
from runners.entry import run_request
from runners.sandbox import probe_sandbox

# Each case starts an evaluation process that imports PyTorch. The module's tests share one xdist worker (`make test`
# runs `--dist loadgroup`), in file order: the checks after the cases read the cases' runs instead of repeating them.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cheats_process")]

HERE = Path(__file__).parent
PROBLEM = HERE.parents[1] / "fixtures" / "problems" / "vectoradd"
CHEATS = sorted((HERE / "cheats").glob("*.py"))


def _expectation(path: Path) -> tuple[set[Verdict], bool]:
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# expect: "), f"{path.name}: first line must be '# expect: verdict|verdict'"
    allowed = {Verdict(v.strip()) for v in lines[0].removeprefix("# expect: ").split("|")}
    return allowed, any(line.startswith("# sandboxed-only") for line in lines[:3])


def _request(path: Path) -> RunRequest:
    task = yaml.safe_load((PROBLEM / "task.yml").read_text())
    return RunRequest(
        problem="vectoradd",
        lang="py",
        mode=Mode.TEST,
        files=load_problem(PROBLEM).files,  # the reference and the _lib it imports
        submission=SubmissionFile(name="submission.py", content=path.read_bytes()),
        tests=task["tests"],
        device="cpu",
        limits=Limits(compile_timeout_s=30, run_timeout_s=60, host_memory_mb=4096),
    )


def _needs_missing_sandbox(path: Path) -> bool:
    return _expectation(path)[1] and probe_sandbox()[0] is None


Evaluated = Callable[[Path], tuple[RunResult, float]]


@pytest.fixture(scope="module")
def evaluated() -> Evaluated:
    """``evaluated(cheat)`` -> (its result, seconds taken): each cheat runs once in this test process, when a test
    first asks for it; the tests that look closer at one cheat's run, or run after all of them, reuse it."""
    done: dict[str, tuple[RunResult, float]] = {}

    def run(path: Path) -> tuple[RunResult, float]:
        if path.name not in done:
            start = time.monotonic()
            result = run_request(_request(path))
            done[path.name] = result, time.monotonic() - start
        return done[path.name]

    return run


@pytest.mark.parametrize("cheat", CHEATS, ids=lambda p: p.name)
def test_cheat_is_rejected_or_scored_honestly(cheat: Path, evaluated: Evaluated) -> None:
    allowed, _ = _expectation(cheat)
    if _needs_missing_sandbox(cheat):
        pytest.skip(f"{cheat.name} needs the sandbox: {probe_sandbox()[2]}")
    result, elapsed = evaluated(cheat)
    detail = f"{cheat.name}: {result.verdict.value}: {result.message!r}\nstderr: {result.stderr[-1500:]}"
    assert not result.passed, detail
    assert result.verdict in allowed, detail
    assert result.verdict is not Verdict.INFRASTRUCTURE_ERROR, detail  # a cheat is the user's fault, not retried
    assert result.score_ns is None
    assert elapsed < 90 + 30, f"{cheat.name} took {elapsed:.0f} s"


def test_forged_files_do_not_leave_the_job_dir(evaluated: Evaluated) -> None:
    if probe_sandbox()[0] is None:
        pytest.skip("without the sandbox a submission can write wherever the runner's user can")
    forge_files = HERE / "cheats" / "forge_files.py"
    assert forge_files in CHEATS
    evaluated(forge_files)
    assert not Path("/tmp/kernelcup-forged-result.json").exists()


def test_forged_stdout_is_shown_not_believed(evaluated: Evaluated) -> None:
    result, _ = evaluated(HERE / "cheats" / "forge_stdout.py")
    assert '"verdict": "accepted"' in result.stdout  # the user sees what their code printed...
    assert result.verdict is Verdict.WRONG_ANSWER  # ...and the checker decides
    assert "differ" in result.message or "expected" in result.message


def test_next_run_after_the_cheats_is_accepted(evaluated: Evaluated) -> None:
    ran = [evaluated(cheat) for cheat in CHEATS if not _needs_missing_sandbox(cheat)]  # every cheat has run first
    assert ran
    honest = HERE.parent / "bad_submissions" / "correct.py"
    result = run_request(_request(honest))
    assert result.verdict is Verdict.ACCEPTED, result.message
