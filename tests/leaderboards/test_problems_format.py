from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import write_problem
from pydantic import ValidationError

from leaderboards.problem_rules import check_case, problem_path_issue, text_issue
from leaderboards.problems import ProblemFormatError, Task, load_problem, load_problem_set
from leaderboards.snapshot import problem_from_snapshot
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
    assert req.dtype == "fp32"  # no dtype declared: the fp32 (CUDA core) peak bounds the flops


def test_the_declared_dtype_travels_in_the_request_and_a_wrong_one_names_the_allowed(tmp_path: Path) -> None:
    cases = "tests: [{size: 3, seed: 1}]\nbenchmarks: [{size: 9, seed: 2}]\n"
    problem = load_problem(_problem(tmp_path / "mm", f"description: mm\ndtype: fp16\n{cases}"))
    assert problem.request("s.py", b"", Mode.BENCHMARK, device="cuda").dtype == "fp16"
    assert problem_from_snapshot(problem.snapshot()).task.dtype == "fp16"  # a leaderboard keeps it
    bad = _problem(tmp_path / "bad", f"description: mm\ndtype: fp64\nranking_by: median\n{cases}")
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(bad)
    text = str(exc.value)
    assert "task.yml: dtype: Input should be 'fp32', 'tf32', 'fp16', 'bf16', 'fp8', 'int8' or 'fp4'" in text
    assert "task.yml: ranking_by:" in text  # in the same pass as every other error


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
        tmp_path / "p", "description: d\ntests: [{n: 1}]\nbenchmarks: [{n: 2, seed: 3}]\n", "def ref_kernel(d): pass\n"
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


def test_the_reference_check_runs_every_test_case_on_the_cpu_the_smallest_first() -> None:
    from leaderboards.sync import REFERENCE_CHECK_MAX_S, reference_request

    root = Path(__file__).resolve().parents[2] / "problems"
    matmul = load_problem(root / "matmul")
    assert matmul.smallest_test() == {"m": 1, "k": 1, "n": 1, "seed": 1357}
    request = reference_request(matmul)
    assert request.tests[0] == {"m": 1, "k": 1, "n": 1, "seed": 1357}
    every = [*matmul.task.tests, *matmul.task.holdout]  # every one, held-out ones too: a case failing later
    assert sorted(map(str, request.tests)) == sorted(map(str, every))
    assert request.benchmarks == matmul.task.benchmarks  # their inputs are generated once, never timed
    bound = min(matmul.task.test_timeout_s + matmul.task.benchmark_timeout_s, REFERENCE_CHECK_MAX_S)
    assert request.limits.run_timeout_s == bound and request.limits.compile_timeout_s == 0  # nothing compiles
    assert request.device == "cpu" and request.mode is Mode.TEST and request.seed is None
    assert request.files == matmul.files
    cuda = reference_request(load_problem(root / "vectoradd_cu"))
    assert cuda.submission.name.endswith(".cu")


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("\x1b[2Jcleared", "U+001B"),
        ("a\rb", "U+000D"),
        ("\x9bcsi", "U+009B"),
        ("\x7f", "U+007F"),
        ("name \u202eexe.txt", "U+202E"),
        ("isolate \u2066x\u2069", "U+2066"),
    ],
)
def test_free_text_refuses_control_characters_and_bidi_overrides(text: str, bad: str) -> None:
    issue = text_issue(text)
    assert issue is not None and bad in issue
    assert text not in issue  # named by code point, never echoed


def test_free_text_keeps_newlines_tabs_and_any_language() -> None:
    assert (
        text_issue("Add one.\n\tThen twice: x + 2 (\u00e9l\u00e8ve, \u0645\u0631\u062d\u0628\u0627, \u65e5\u672c)")
        is None
    )


@pytest.mark.parametrize(
    "rel",
    [
        "/abs/reference.py",
        "sub/../sub/keep.py",
        "./reference.py",
        "sub//keep.py",
        "sub/",
        ".",
        "",
        "a\0b.py",
        "..",
        "sub\\keep.py",
        "x\x1b.py",
    ],
)
def test_listed_paths_follow_the_runners_rule(rel: str) -> None:
    assert problem_path_issue(rel) is not None


def test_normal_relative_paths_are_fine() -> None:
    assert problem_path_issue("reference.py") is None and problem_path_issue("sub/harness.cu") is None


@pytest.mark.parametrize("key", ["1size", "class", "with space", "x-y", "\u00e9", "a" * 65, "", "<img>"])
def test_case_keys_are_identifiers(key: str) -> None:
    with pytest.raises(ValueError, match="not a parameter name"):
        check_case({key: 1})


def test_case_integers_fit_in_64_bits() -> None:
    assert check_case({"size": 2**63 - 1, "seed": -(2**63)})
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        check_case({"size": 2**63})


def test_numbers_are_strict_but_integers_are_numbers(tmp_path: Path) -> None:
    base = "description: d\ntests: [{size: 1, seed: 1}]\nbenchmarks: [{size: 2, seed: 3}]\n"
    assert load_problem(_problem(tmp_path / "int", base + "test_timeout_s: 60\n")).task.test_timeout_s == 60.0
    assert load_problem(_problem(tmp_path / "exp", base + "test_timeout_s: 6e1\n")).task.test_timeout_s == 60.0
    for i, bad in enumerate(["true", "'60'", "'1e2'"]):
        with pytest.raises(ProblemFormatError, match="test_timeout_s: Input should be a valid number"):
            load_problem(_problem(tmp_path / str(i), base + f"test_timeout_s: {bad}\n"))


def test_a_stored_snapshot_is_read_under_the_rules_of_its_day(tmp_path: Path) -> None:
    """A leaderboard synced before a rule was added stays readable (the runner refuses an unseeded ranked run)."""
    path = _problem(tmp_path / "p", "description: d\ntests: [{size: 1, seed: 1}]\nbenchmarks: [{size: 2, seed: 3}]\n")
    snap = load_problem(path).snapshot()
    snap["task"]["benchmarks"] = [{"size": 2}]
    snap["task"]["description"] = "old \x1b[1mbold\x1b[0m text"
    assert problem_from_snapshot(snap).task.benchmarks == [{"size": 2}]
    with pytest.raises(ValidationError, match="has no 'seed'"):
        Task.model_validate(snap["task"])


def test_links_that_stay_inside_their_folders_are_followed(tmp_path: Path) -> None:
    task = "description: d\ntests: [{size: 1, seed: 1}]\nbenchmarks: [{size: 2, seed: 3}]\n"
    path = _problem(tmp_path / "set" / "p", "")
    (path / "real.yml").write_text(task)
    (path / "task.yml").unlink()
    (path / "task.yml").symlink_to("real.yml")
    assert load_problem(path).task.benchmarks == [{"size": 2, "seed": 3}]
    (tmp_path / "set" / "alias").symlink_to("p")
    (tmp_path / "set" / "s.yaml").write_text(
        "name: s\nproblems:\n  - {directory: alias, deadline: 2099-01-01, devices: [cpu]}\n"
    )
    assert list(load_problem_set(tmp_path / "set" / "s.yaml")[1]) == ["alias"]


def test_a_problem_folder_name_is_capped_where_a_folder_is_loaded_alone(tmp_path: Path) -> None:
    """The admin API and the bot load a folder without a set: a name longer than a leaderboard's names the folder
    it is in (the problem column of PostgreSQL, 200 characters, refused 230 with a database error)."""
    task = "description: add\ntests: [{size: 3, seed: 1}]\nbenchmarks: [{size: 9, seed: 2}]\n"
    assert load_problem(_problem(tmp_path / ("p" * 100), task)).name == "p" * 100
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(_problem(tmp_path / ("q" * 101), task))
    assert str(exc.value) == (
        f"{tmp_path}: the folder's name (starting {'q' * 20!r}) is 101 characters; a problem's name, its folder's, "
        "is at most 100: rename the folder"
    )


def test_a_misspelt_field_and_a_misspelt_case_key_are_reported_in_one_pass(tmp_path: Path) -> None:
    """Newcomer's walk, 2026-11-29: with a misspelt field in task.yml, a misspelt case key came out only once the
    field was fixed (the case keys were checked against a Task that did not validate); docs/authoring.md says every
    error of a folder is reported at once."""
    folder = write_problem(tmp_path, tests=({"sise": 3, "seed": 1},))
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["precison"] = "exact"
    (folder / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(folder)
    said = "\n".join(str(e) for e in exc.value.errors)
    assert "precison" in said and "'sise' is not a parameter" in said, said


def test_odd_cases_in_a_task_yml_that_does_not_validate_are_reported_not_a_crash(tmp_path: Path) -> None:
    folder = write_problem(tmp_path)
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["precison"] = "exact"
    task["tests"] = [{1: 2, "size": 3}, "x", None]
    task["benchmarks"] = "not a list"
    (folder / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(folder)
    assert "precison" in "\n".join(str(e) for e in exc.value.errors)
