"""Every solution and template of every problem, run through the harness in test mode, gets its declared verdict.

On the CPU (PyTorch CPU, Triton's interpreter) solutions that need CUDA are skipped; the ``gpu`` twin runs all
of them on the GPU, one evaluation each. The tests are the problem's tests and its held-out cases.

On the CPU the Python solutions (PyTorch, Triton, a Python DSL such as Helion) of one problem and language whose
verdict is accepted or wrong_answer share evaluations: an evaluation costs about 4 CPU-seconds whatever it runs (two
``import torch``, docs/architecture.md), so one run of the real harness evaluates several of them in turn
(``_batch_file``). Its submission is one file that loads each solution's source as a module of its own and sends the
test calls of the run to them in blocks: the run's tests are the problem's tests once per solution, so each solution
is called once on every test case, in order, through the harness (shared memory, the check on regenerated inputs),
exactly as in a run of its own. A solution's verdict is its block's: accepted if every test of the block passed,
wrong_answer if one failed. A run that stops in a block (an error in a call) gives that block the run's verdict, and
the solutions after it get a batch of their own; a batch that cannot even load runs each solution alone. Wrong
solutions go first: a correct one run after them that a predecessor disturbed fails loudly, and no wrong one runs
after a correct one that could hide it. Every other solution (another expected verdict, several ranks) runs alone,
as on the GPU. The tests of one problem form one xdist group, so each of its batches runs once, on one worker.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from problem_catalog import PROBLEMS, Solution, all_solutions, single_rank_problem_names

from leaderboards.problems import Problem, load_problem
from runners.contract import Mode, RunResult, TestResult, Verdict
from runners.entry import run_request

SOLUTIONS = all_solutions()
SINGLE_RANK = set(single_rank_problem_names())


@functools.cache
def _problem(name: str) -> Problem:
    """Each problem loaded once per test process (its cases are shared by every solution of it), its held-out cases
    run as tests too: a shipped correct solution must be correct beyond the cases a competitor sees (the Triton
    llama_layer solution once failed the held-out head_dim of 80 on the H200, which no public case has)."""
    problem = load_problem(PROBLEMS / name)
    task = problem.task
    if not task.holdout:
        return problem
    return replace(problem, task=task.model_copy(update={"tests": [*task.tests, *task.holdout]}))


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


def _problem_for(solution: Solution) -> Problem:
    """The problem as the solution runs it: in its own language where that is not the problem's."""
    problem = _problem(solution.problem)
    return problem.in_language(solution.lang) if solution.lang is not None else problem


def _run(solution: Solution, device: str) -> RunResult:
    """The solution's run in test mode, through the path workers and ``kernelcup run`` take."""
    problem = _problem_for(solution)
    request = problem.request(solution.path.name, solution.path.read_bytes(), Mode.TEST, device=device)
    return run_request(request)


# ---- several solutions of one problem in one evaluation (CPU) ----------------------------------------------------
def _batchable(solution: Solution) -> bool:
    """A Python solution (PyTorch, Triton, or a Python DSL such as Helion) of a one-process problem, expected to be
    accepted or wrong. Batches are of one problem and one language."""
    return (
        not solution.needs_cuda
        and solution.path.suffix == ".py"
        and solution.problem in SINGLE_RANK
        and solution.expect in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER)
        and _twin(solution) is None
    )


_DISPATCH = '''
import linecache
import sys
import types

_kernels = []
for _i, (_name, _source) in enumerate(SOURCES):
    _file = "/kernelcup-batch/" + _name  # what tracebacks and inspect (Triton's JIT reads its kernels' source) see
    linecache.cache[_file] = (len(_source), None, _source.splitlines(True), _file)
    _module = types.ModuleType(f"batch_solution_{_i}")
    _module.__file__ = _file
    sys.modules[_module.__name__] = _module
    exec(compile(_source, _file, "exec"), _module.__dict__)
    _kernels.append(_module.custom_kernel)
_calls = 0


def custom_kernel(data):
    """Test call k of the run goes to solution k // TESTS (test mode calls once per test, in order)."""
    global _calls
    solution = _kernels[_calls // TESTS]
    _calls += 1
    return solution(data)
'''


def _batch_file(solutions: list[Solution], tests: int) -> bytes:
    sources = [(s.id, s.path.read_text()) for s in solutions]
    return f"SOURCES = {json.dumps(sources)}\nTESTS = {tests}\n{_DISPATCH}".encode()


@dataclass(frozen=True)
class Outcome:
    """One solution's share of a run: its verdict, its tests (indices from 0) and the run's message and output."""

    verdict: Verdict
    tests: list[TestResult]
    message: str
    stderr: str


def _own_outcome(result: RunResult) -> Outcome:
    return Outcome(result.verdict, list(result.tests), result.message, result.stderr or "")


def _run_batch(solutions: list[Solution]) -> dict[str, Outcome]:
    """Each solution's outcome, from as few runs as the harness allows (see the module's docstring)."""
    problem = _problem_for(solutions[0])
    cases = problem.task.tests
    size = len(cases)
    judgements = (Verdict.ACCEPTED, Verdict.WRONG_ANSWER)
    outcomes: dict[str, Outcome] = {}
    todo = list(solutions)
    while todo:
        if len(todo) == 1:
            outcomes[todo[0].id] = _own_outcome(_run(todo[0], "cpu"))
            break
        request = problem.request("solutions.py", _batch_file(todo, size), Mode.TEST, device="cpu")
        request = request.model_copy(update={"tests": list(cases) * len(todo)})
        request.limits.run_timeout_s *= len(todo)  # each solution's own limit
        result = run_request(request)
        if not result.tests:  # the batch did not load (or start): each alone
            outcomes.update({s.id: _own_outcome(_run(s, "cpu")) for s in todo})
            break
        done = len(result.tests)
        for k, solution in enumerate(todo):
            ran = result.tests[k * size : (k + 1) * size]
            block = [t.model_copy(update={"index": t.index - k * size}) for t in ran]
            judged = (k + 1) * size <= done and all(t.verdict in judgements for t in block)
            if judged:  # every test of the block ran and was checked
                passed = sum(t.verdict is Verdict.ACCEPTED for t in block)
                verdict = Verdict.ACCEPTED if passed == size else Verdict.WRONG_ANSWER
                message = f"{passed} of {size} tests passed (one of {len(todo)} solutions evaluated in one run)"
            else:  # the block the run stopped in: the run's verdict is this solution's
                verdict, message = result.verdict, result.message
            outcomes[solution.id] = Outcome(verdict, block, message, result.stderr or "")
            if (k + 1) * size >= done:  # the last block the run reached: the rest (if any) in a run of their own
                todo = todo[k + 1 :]
                break
    return outcomes


@functools.cache
def _batch_outcomes(problem: str, ids: tuple[str, ...]) -> dict[str, Outcome]:
    by_id = {s.id: s for s in SOLUTIONS}
    chosen = [by_id[i] for i in ids]
    wrong_first = [s for s in chosen if s.expect is Verdict.WRONG_ANSWER] + [
        s for s in chosen if s.expect is Verdict.ACCEPTED
    ]
    return _run_batch(wrong_first)


def _selected_batch(solution: Solution, session: pytest.Session) -> tuple[str, ...]:
    """The batchable solutions of ``solution``'s problem that this session runs (``-k`` may have chosen a few)."""
    chosen = []
    for item in session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        other = params.get("solution")
        ours = isinstance(other, Solution) and (other.problem, other.lang) == (solution.problem, solution.lang)
        if getattr(item, "originalname", "") == "test_solution_on_cpu" and ours and _batchable(other):
            chosen.append(other.id)
    return tuple(sorted(set(chosen) | {solution.id}))


def _assert_verdict(solution: Solution, result: RunResult | Outcome) -> None:
    details = "; ".join(f"test {t.index + 1}: {t.message[:300]}" for t in result.tests if t.message)
    assert result.verdict == solution.expect, (
        f"{solution.id}: expected {solution.expect.value}, got {result.verdict.value}: {result.message[:1500]}"
        f"\n{details[:2000]}\n{(result.stderr or '')[-2000:]}"
    )
    if solution.expect.value == "wrong_answer":
        assert any(not t.verdict.passed for t in result.tests), "a wrong answer must name the failing test"


def _cpu_params() -> list[object]:
    return [pytest.param(s, id=s.id, marks=[pytest.mark.xdist_group(f"solutions-{s.problem}")]) for s in SOLUTIONS]


@pytest.mark.parametrize("solution", _cpu_params())
def test_solution_on_cpu(solution: Solution, request: pytest.FixtureRequest) -> None:
    if solution.needs_cuda:
        pytest.skip("needs CUDA (runs in test_solution_on_gpu)")
    twin = _twin(solution)
    if twin is not None:
        pytest.skip(f"the same code as {twin.id}, which runs here")
    if _batchable(solution):
        result: RunResult | Outcome = _batch_outcomes(solution.problem, _selected_batch(solution, request.session))[
            solution.id
        ]
    else:
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
