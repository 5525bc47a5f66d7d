"""Problem validation reports every error of a folder or set in one pass (issue 15): an error in task.yml does not
hide the errors of the files it names, nor an error in a problem set those of the folders it lists."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.problems import ProblemFormatError, load_problem, load_problem_set
from leaderboards.sync import validate_path

GOOD_TASK = "description: add\ntests: [{size: 3}]\nbenchmarks: [{size: 9, seed: 1}]\n"
GOOD_REFERENCE = (
    "def generate_input(size, seed=0):\n    return size\n\n"
    "def ref_kernel(data):\n    return data\n\n"
    "def check_implementation(data, output):\n    return True, ''\n"
)


def _folder(root: Path, task: str, reference: str | None = GOOD_REFERENCE) -> Path:
    root.mkdir(parents=True)
    (root / "task.yml").write_text(task)
    if reference is not None:
        (root / "reference.py").write_text(reference)
    return root


def _errors(call) -> list[str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ProblemFormatError) as exc:
        call()
    return [str(e) for e in exc.value.errors]


def test_task_errors_do_not_hide_the_reference_and_template_errors(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path / "bad",
        "descripton: typo\ntests: [{size: 3}]\nbenchmarks: []\ntemplates: {pytorch: missing_template.py}\n",
        reference="def ref_kernel(data):\n    return data\n",
    )
    errors = " | ".join(_errors(lambda: load_problem(folder)))
    assert "descripton: unknown field" in errors  # task.yml
    assert "description: this field is required" in errors
    assert "benchmarks" in errors
    assert "'missing_template.py' does not exist" in errors  # a template task.yml names
    assert "generate_input: must be defined at module level" in errors  # reference.py, same pass
    assert "check_implementation: must be defined at module level" in errors


def test_a_task_that_is_not_yaml_still_gets_its_reference_checked(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "bad", "description: [unclosed\n", reference="def ref_kernel(:\n")
    errors = " | ".join(_errors(lambda: load_problem(folder)))
    assert "not valid YAML" in errors and "syntax error" in errors


def test_a_folder_without_task_yml_gets_one_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    errors = _errors(lambda: load_problem(tmp_path / "empty"))
    assert len(errors) == 1 and "task.yml: file not found" in errors[0]


def test_set_errors_do_not_hide_the_errors_of_its_folders(tmp_path: Path) -> None:
    _folder(tmp_path / "broken", "description: x\ntests: []\nbenchmarks: [{size: 1}]\n")
    _folder(tmp_path / "fine", GOOD_TASK)
    (tmp_path / "set.yaml").write_text(
        "name: s\nextra_field: 1\nproblems:\n"
        "  - {directory: broken, devices: [cpu], deadline: 2099-01-01}\n"
        "  - {directory: fine, devices: [cpu], deadline: 12345}\n"  # invalid entry: reported, folder skipped
        "  - {directory: fin, devices: [cpu], deadline: 2099-01-01}\n"  # mistyped folder
    )
    errors = " | ".join(_errors(lambda: load_problem_set(tmp_path / "set.yaml")))
    assert "extra_field: unknown field" in errors  # the set file's own error
    assert "problems.1.deadline" in errors and "seconds since 1970" in errors
    assert "broken/task.yml: tests" in errors  # the listed folder's error, in the same pass
    assert "is not a problem folder" in errors and "did you mean" in errors


def test_validate_and_the_cli_print_every_error_at_once(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path / "bad",
        "descripton: typo\ntests: [{size: 3}]\nbenchmarks: [{size: 9, seed: 1}]\n",
        reference="x = (\n",
    )
    report = validate_path(folder)
    fields = {issue.field for issue in report.issues}
    assert {"descripton", "description", "line 1"} <= fields, fields
    result = CliRunner().invoke(build_app(), ["problems", "validate", str(folder)])
    assert result.exit_code == 1
    assert "descripton" in result.output and "syntax error" in result.output and "3 error(s)" in result.output
