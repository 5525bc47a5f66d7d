"""Input hacks (``leaderboards/hacks.py``): a case inside the problem's hack_space, run on the reference and then on
kernels; a kernel that fails where the reference passes is broken. The fixture problem (``hack_fixture/``) triples a
matrix and takes any rows and cols up to 256; ``shape_keyed.py`` is exact on the shapes it has seen and wrong on a row
whose length is no multiple of 32."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path
from typing import Any

import pytest

from leaderboards.hacks import HackRefused, try_hack
from leaderboards.problems import Problem, load_problem
from runners.contract import RunRequest, RunResult, TestResult, Verdict

FIXTURE = Path(__file__).parent / "hack_fixture"
KERNELS = [(name, (FIXTURE / name).read_bytes()) for name in ("shape_keyed.py", "honest.py", "crashes.py")]


def run_in_process(request: RunRequest) -> RunResult:
    """The evaluator's test mode in this process (no sandbox): generate_input -> custom_kernel ->
    check_implementation on each test; an exception in the kernel is a runtime error."""
    reference: dict[str, Any] = {"__name__": "reference"}
    exec(compile(request.files["reference.py"], "reference.py", "exec"), reference)
    submission: dict[str, Any] = {"__name__": "submission"}
    tests = []
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(request.submission.content, request.submission.name, "exec"), submission)
        for i, case in enumerate(request.tests):
            try:
                output = submission["custom_kernel"](reference["generate_input"](**case))
            except Exception as exc:
                return RunResult(verdict=Verdict.RUNTIME_ERROR, mode=request.mode, message=f"{exc}")
            ok, message = reference["check_implementation"](reference["generate_input"](**case), output)
            tests.append(TestResult(index=i, case=case, verdict=Verdict.ACCEPTED if ok else Verdict.WRONG_ANSWER,
                                    message=message))  # fmt: skip
    passed = all(t.verdict is Verdict.ACCEPTED for t in tests)
    return RunResult(verdict=Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER, mode=request.mode, tests=tests)


@pytest.fixture
def problem(tmp_path: Path) -> Problem:
    folder = tmp_path / "triple"
    folder.mkdir()
    for name in ("reference.py", "task.yml"):
        shutil.copy(FIXTURE / name, folder / name)
    return load_problem(folder)


def test_an_in_range_hack_breaks_the_shape_keyed_kernel_and_the_crashing_one(problem: Problem) -> None:
    report = try_hack(problem, {"rows": 3, "cols": 33, "seed": 5}, KERNELS, run_in_process)
    verdicts = {e.name: (e.verdict, e.broken) for e in report.entries}
    assert verdicts == {
        "shape_keyed.py": (Verdict.WRONG_ANSWER, True),
        "honest.py": (Verdict.ACCEPTED, False),
        "crashes.py": (Verdict.RUNTIME_ERROR, True),
    }
    assert [e.name for e in report.broken] == ["shape_keyed.py", "crashes.py"]


def test_a_hack_on_a_seen_shape_breaks_nothing(problem: Problem) -> None:
    report = try_hack(problem, {"rows": 4, "cols": 64, "seed": 99}, KERNELS[:2], run_in_process)
    assert report.broken == ()


@pytest.mark.parametrize(
    ("case", "field", "words"),
    [
        ({"rows": 1000, "cols": 3, "seed": 1}, "rows", "outside 1 .. 256"),
        ({"rows": 3.5, "cols": 3, "seed": 1}, "rows", "not a whole number"),
        ({"rows": 3, "cols": 3}, "seed", "missing"),
        ({"rows": 200, "cols": 200, "seed": 1}, "case", "above this problem's cap of 16,384"),
    ],
)
def test_a_hack_outside_the_space_is_refused_with_its_field(
    problem: Problem, case: dict[str, Any], field: str, words: str
) -> None:
    ran: list[RunRequest] = []
    with pytest.raises(HackRefused) as refused:
        try_hack(problem, case, KERNELS, lambda r: ran.append(r) or run_in_process(r))
    assert [f.field for f in refused.value.fields] == [field] and words in str(refused.value)
    assert ran == []  # nothing runs for a case outside the space


def test_a_hack_the_reference_fails_is_refused_before_any_kernel_runs(problem: Problem) -> None:
    ran: list[str] = []

    def run(request: RunRequest) -> RunResult:
        ran.append(request.submission.name)
        return run_in_process(request)

    with pytest.raises(HackRefused, match="the reference does not pass its own check on this case") as refused:
        try_hack(problem, {"rows": 2, "cols": 7, "seed": 1}, KERNELS, run)
    assert [f.field for f in refused.value.fields] == ["case"]
    assert ran == ["reference_as_submission.py"]


def test_a_problem_without_a_hack_space_takes_none(problem: Problem, tmp_path: Path) -> None:
    folder = problem.path
    task = (folder / "task.yml").read_text()
    (folder / "task.yml").write_text(task[: task.index("hack_space:")])
    with pytest.raises(HackRefused, match="declares no hack_space"):
        try_hack(load_problem(folder), {"rows": 3, "cols": 33, "seed": 5}, KERNELS, run_in_process)


def test_the_hack_runs_in_the_sandboxed_evaluator(problem: Problem) -> None:
    """The real runner: the reference as a submission (its files embedded), then the shape-keyed kernel."""
    from runners.entry import run_request

    report = try_hack(problem, {"rows": 3, "cols": 33, "seed": 5}, KERNELS[:1], run_request)
    (entry,) = report.entries
    assert entry.broken and entry.verdict is Verdict.WRONG_ANSWER and "differ" in entry.message
