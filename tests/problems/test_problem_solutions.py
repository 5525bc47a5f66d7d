"""Every solution and template of every problem, run through the harness in test mode, gets its declared verdict.

On the CPU (PyTorch CPU, Triton's interpreter) solutions that need CUDA are skipped; the ``gpu`` twin runs all
of them on the GPU. The runs are started together in a thread pool when the first test asks for its result
(each run is its own process, so a 2-core CI machine runs two at a time; ``KERNELCUP_TEST_WORKERS`` sets how
many), then each test waits for its own.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from problem_catalog import PROBLEMS, Solution, all_solutions

from leaderboards.problems import Problem, load_problem
from runners.contract import Mode, RunRequest, RunResult
from runners.entry import run_request

SOLUTIONS = all_solutions()


def _request(problems: dict[str, Problem], solution: Solution, device: str) -> RunRequest:
    """The solution's test-mode request. Built on the main thread: loading a problem parses its reference with
    ast.parse, which CPython 3.11 does not make safe to call from several threads at once ("AST constructor
    recursion depth mismatch")."""
    if solution.problem not in problems:
        problems[solution.problem] = load_problem(PROBLEMS / solution.problem)
    problem = problems[solution.problem]
    if solution.lang is not None:
        problem = problem.in_language(solution.lang)
    return problem.request(solution.path.name, solution.path.read_bytes(), Mode.TEST, device=device)


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest):
    """Futures of the runs of every selected test of this module, started together on first use."""
    workers = int(os.environ.get("KERNELCUP_TEST_WORKERS", 0)) or max(2, min(4, os.cpu_count() or 2))
    pool = ThreadPoolExecutor(max_workers=workers)
    futures: dict[tuple[str, str], Future[RunResult]] = {}
    problems: dict[str, Problem] = {}
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if item.module is not request.module or spec is None or "solution" not in spec.params:
            continue
        if any(m.name == "skip" for m in item.iter_markers()):
            continue
        solution: Solution = spec.params["solution"]
        device = "cuda" if "gpu" in item.keywords else "cpu"
        if device == "cpu" and solution.needs_cuda:
            continue
        futures[(solution.id, device)] = pool.submit(run_request, _request(problems, solution, device))
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def _assert_verdict(solution: Solution, result: RunResult) -> None:
    details = "; ".join(f"test {i + 1}: {t.message[:300]}" for i, t in enumerate(result.tests) if t.message)
    assert result.verdict == solution.expect, (
        f"{solution.id}: expected {solution.expect.value}, got {result.verdict.value}: {result.message[:1500]}"
        f"\n{details[:2000]}\n{(result.stderr or '')[-2000:]}"
    )
    if solution.expect.value == "wrong_answer":
        assert any(not t.verdict.passed for t in result.tests), "a wrong answer must name the failing test"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[s.id for s in SOLUTIONS])
def test_solution_on_cpu(solution: Solution, runs: dict) -> None:
    if solution.needs_cuda:
        pytest.skip("needs CUDA (runs in test_solution_on_gpu)")
    result = runs[(solution.id, "cpu")].result(timeout=900)
    if result.message.startswith("this runner does not offer"):
        pytest.skip(result.message)  # a Python DSL's package is not installed here (helion: pip install helion)
    _assert_verdict(solution, result)


@pytest.mark.gpu
@pytest.mark.parametrize("solution", SOLUTIONS, ids=[s.id for s in SOLUTIONS])
def test_solution_on_gpu(solution: Solution, runs: dict) -> None:
    result = runs[(solution.id, "cuda")].result(timeout=900)
    if result.message.startswith("this runner does not offer"):
        pytest.skip(result.message)  # a language's library is not installed here (CUTLASS, TileLang, ...)
    if "one per GPU, and this runner has" in result.message:
        pytest.skip(result.message)  # a problem on several GPUs (docs/multigpu.md) on a machine with fewer
    _assert_verdict(solution, result)
