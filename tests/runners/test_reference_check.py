"""``runners.entry.check_reference`` (``problems validate --run`` and ``sync``): the reference passes its own check on
the smallest test case, and every benchmark case's inputs can be made, in the sandboxed evaluator on the CPU."""

from __future__ import annotations

from pathlib import Path

from leaderboards.problems import load_problem
from leaderboards.sync import reference_request
from runners.contract import RunRequest, Verdict
from runners.entry import check_reference
from runners.settings import RunnerSettings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "problems" / "vectoradd"


def _request() -> RunRequest:
    return reference_request(load_problem(FIXTURE))


def test_a_sound_problem_passes(tmp_path: Path) -> None:
    result = check_reference(_request(), settings=RunnerSettings(job_root=tmp_path, allow_unsandboxed=True))
    assert result.verdict is Verdict.ACCEPTED, result.message


def test_a_benchmark_case_whose_inputs_cannot_be_made_is_the_problems_fault(tmp_path: Path) -> None:
    request = _request()
    benchmarks = [request.benchmarks[0], {"size": 2**62, "seed": 5}]  # fits in 64 bits, not in any memory
    result = check_reference(
        request.model_copy(update={"benchmarks": benchmarks}),
        settings=RunnerSettings(job_root=tmp_path, allow_unsandboxed=True),
    )
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert "the problem 'vectoradd' failed: benchmark 2: the problem's generate_input(size=4611686018427387904" in (
        result.message
    ), result.message
