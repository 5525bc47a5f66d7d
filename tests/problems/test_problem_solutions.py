"""Every solution and template of every problem, run through the harness in test mode, gets its declared verdict.

On the CPU (PyTorch CPU, Triton's interpreter) solutions that need CUDA are skipped; the ``gpu`` twin runs all
of them on the GPU. Each test runs its own solution (one evaluation process); pytest-xdist spreads them over its
workers (``make test`` runs ``-n``), so a 2-core CI machine runs two at a time.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from problem_catalog import PROBLEMS, Solution, all_solutions

from leaderboards.problems import Problem, load_problem
from runners.contract import Mode, RunResult
from runners.entry import run_request

SOLUTIONS = all_solutions()


@functools.cache
def _problem(name: str) -> Problem:
    """Each problem loaded once per test process (its cases are shared by every solution of it)."""
    return load_problem(PROBLEMS / name)


def _code(path: Path) -> list[str]:
    """A Python file's lines without comments (header directives included) and blank lines."""
    return [line for line in path.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _twin(solution: Solution) -> Solution | None:
    """A correct solution of the same problem and language whose code is the template's: running both on the CPU
    evaluates the same code twice (each run costs an evaluation process pair, seconds of the suite's budget)."""
    if "templates" not in solution.path.parts or solution.path.suffix != ".py":
        return None
    code = _code(solution.path)
    same_kind = [o for o in SOLUTIONS if (o.problem, o.lang) == (solution.problem, solution.lang)]
    correct = [o for o in same_kind if "correct" in o.path.parts and o.path.suffix == ".py"]
    return next((o for o in correct if _code(o.path) == code), None)


def _run(solution: Solution, device: str) -> RunResult:
    """The solution's run in test mode, through the path workers and ``kernelcup run`` take."""
    problem = _problem(solution.problem)
    if solution.lang is not None:
        problem = problem.in_language(solution.lang)
    request = problem.request(solution.path.name, solution.path.read_bytes(), Mode.TEST, device=device)
    return run_request(request)


def _assert_verdict(solution: Solution, result: RunResult) -> None:
    details = "; ".join(f"test {i + 1}: {t.message[:300]}" for i, t in enumerate(result.tests) if t.message)
    assert result.verdict == solution.expect, (
        f"{solution.id}: expected {solution.expect.value}, got {result.verdict.value}: {result.message[:1500]}"
        f"\n{details[:2000]}\n{(result.stderr or '')[-2000:]}"
    )
    if solution.expect.value == "wrong_answer":
        assert any(not t.verdict.passed for t in result.tests), "a wrong answer must name the failing test"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[s.id for s in SOLUTIONS])
def test_solution_on_cpu(solution: Solution) -> None:
    if solution.needs_cuda:
        pytest.skip("needs CUDA (runs in test_solution_on_gpu)")
    twin = _twin(solution)
    if twin is not None:
        pytest.skip(f"the same code as {twin.id}, which runs here")
    result = _run(solution, "cpu")
    if result.message.startswith("this runner does not offer"):
        pytest.skip(result.message)  # a Python DSL's package is not installed here (helion: pip install helion)
    _assert_verdict(solution, result)


@pytest.mark.gpu
@pytest.mark.parametrize("solution", SOLUTIONS, ids=[s.id for s in SOLUTIONS])
def test_solution_on_gpu(solution: Solution) -> None:
    result = _run(solution, "cuda")
    if result.message.startswith("this runner does not offer"):
        pytest.skip(result.message)  # a language's library is not installed here (CUTLASS, TileLang, ...)
    if "one per GPU, and this runner has" in result.message:
        pytest.skip(result.message)  # a problem on several GPUs (docs/multigpu.md) on a machine with fewer
    _assert_verdict(solution, result)
