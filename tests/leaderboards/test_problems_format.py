from __future__ import annotations

from pathlib import Path

import pytest

from leaderboards.problems import ProblemFormatError, load_problem, load_problem_set
from runners.contract import Mode

REFERENCE = """
def generate_input(size, seed):
    return size, seed

def ref_kernel(data):
    return data

def check_implementation(data, output):
    return True, ""
"""


def _problem(root: Path, task: str, reference: str = REFERENCE) -> Path:
    root.mkdir(parents=True)
    (root / "task.yml").write_text(task)
    (root / "reference.py").write_text(reference)
    return root


def test_valid_problem_builds_a_request(tmp_path: Path) -> None:
    path = _problem(
        tmp_path / "add", "description: add\ntests: [{size: 3, seed: 1}]\nbenchmarks: [{size: 9, seed: 2}]\n"
    )
    problem = load_problem(path)
    req = problem.request("s.py", b"def custom_kernel(d): return d", Mode.RANKED, device="cpu", seed=42)
    assert req.problem == "add" and req.seed == 42 and req.files["reference.py"] == REFERENCE
    assert req.limits.run_timeout_s == problem.task.ranked_timeout_s


def test_every_error_is_reported_with_file_and_field(tmp_path: Path) -> None:
    path = _problem(tmp_path / "bad", "descripton: typo\ntests: []\n", reference="def ref_kernel(d): pass\n")
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(path)
    text = str(exc.value)
    assert "task.yml: descripton: unknown field" in text
    assert "task.yml: description: this field is required" in text
    assert "task.yml: tests:" in text and "task.yml: benchmarks: this field is required" in text


def test_reference_must_define_the_three_functions(tmp_path: Path) -> None:
    path = _problem(
        tmp_path / "p", "description: d\ntests: [{n: 1}]\nbenchmarks: [{n: 2}]\n", "def ref_kernel(d): pass\n"
    )
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(path)
    assert {e.field for e in exc.value.errors} == {"generate_input", "check_implementation"}


def test_problem_set_deadlines_are_utc_and_names_unique(tmp_path: Path) -> None:
    _problem(tmp_path / "add", "description: add\ntests: [{size: 1, seed: 1}]\nbenchmarks: [{size: 2, seed: 2}]\n")
    (tmp_path / "set.yaml").write_text(
        "name: s\nproblems:\n"
        "  - {directory: add, deadline: 2030-01-01T00:00:00, devices: [cpu]}\n"
        "  - {directory: add, deadline: 2030-01-01T02:00:00+02:00, devices: [cpu]}\n"
    )
    with pytest.raises(ProblemFormatError, match="used twice"):
        load_problem_set(tmp_path / "set.yaml")
    (tmp_path / "set.yaml").write_text(
        "name: s\nproblems:\n  - {directory: add, name: add2, deadline: 2030-01-01T02:00:00+02:00, devices: [cpu]}\n"
    )
    pset, problems = load_problem_set(tmp_path / "set.yaml")
    assert pset.problems[0].deadline.isoformat() == "2030-01-01T00:00:00+00:00"
    assert list(problems) == ["add2"]


def test_the_reference_check_runs_the_smallest_test_case_on_the_cpu() -> None:
    from leaderboards.sync import reference_request

    root = Path(__file__).resolve().parents[2] / "problems"
    matmul = load_problem(root / "matmul")
    assert matmul.smallest_test() == {"m": 1, "k": 1, "n": 1, "seed": 1357}
    request = reference_request(matmul)
    assert request.tests == [{"m": 1, "k": 1, "n": 1, "seed": 1357}] and request.benchmarks == []
    assert request.device == "cpu" and request.mode is Mode.TEST and request.seed is None
    assert request.files == matmul.files
    cuda = reference_request(load_problem(root / "vectoradd_cu"))
    assert cuda.submission.name.endswith(".cu")
