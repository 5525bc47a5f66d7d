""""Did you mean …?" for mistyped leaderboard names and problem folders (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboards.errors import LeaderboardNotFound, close_matches, did_you_mean
from leaderboards.problem_files import nearest_problem_folders, problem_folders
from leaderboards.problems import ProblemFormatError, load_problem, load_problem_set


def test_close_matches_ignore_case_and_rank_the_nearest_first() -> None:
    known = ["softmax", "sort", "matmul", "vectoradd", "vectoradd_cu"]
    assert close_matches("softmx", known)[0] == "softmax"
    assert close_matches("VECTORADD_C", known)[0] == "vectoradd_cu"
    assert close_matches("histogram", known) == []


def test_did_you_mean_is_empty_when_nothing_is_close() -> None:
    assert did_you_mean("softmx", ["softmax"]) == " Did you mean 'softmax'?"
    assert did_you_mean("zzz", ["softmax"]) == ""
    assert did_you_mean("x", []) == ""


def test_leaderboard_not_found_suggests_and_lists() -> None:
    message = str(LeaderboardNotFound("sofmax", ["softmax", "matmul"]))
    assert message == (
        "There is no leaderboard named 'sofmax'. Did you mean 'softmax'? Known leaderboards: matmul, softmax."
    )
    assert str(LeaderboardNotFound("nope", ["add"])) == "There is no leaderboard named 'nope'. Known leaderboards: add."


def _problem(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "task.yml").write_text("description: x\n")
    return folder


def test_nearest_problem_folders_looks_beside_the_path_then_in_the_roots(tmp_path: Path) -> None:
    softmax = _problem(tmp_path / "problems", "softmax")
    _problem(tmp_path / "problems", "matmul")
    (tmp_path / "problems" / "softmax_notes").mkdir()  # no task.yml: not a problem folder
    assert problem_folders(tmp_path / "problems") == [tmp_path / "problems" / "matmul", softmax]
    assert nearest_problem_folders(tmp_path / "problems" / "sofmax") == [softmax]
    assert nearest_problem_folders(tmp_path / "sofmax", (tmp_path / "problems",)) == [softmax]
    assert nearest_problem_folders(tmp_path / "zzz", (tmp_path / "problems",)) == []
    assert nearest_problem_folders(tmp_path / "missing" / "softmax") == []


def test_a_missing_problem_folder_names_the_nearest(tmp_path: Path) -> None:
    _problem(tmp_path, "softmax")
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(tmp_path / "softmx")
    assert f"did you mean {tmp_path / 'softmax'}?" in str(exc.value)


def test_a_problem_set_entry_with_a_mistyped_folder_names_the_nearest(tmp_path: Path) -> None:
    _problem(tmp_path, "softmax")
    entry = "  - directory: sofmax\n    devices: [cpu]\n    deadline: 2099-01-01\n"
    (tmp_path / "set.yaml").write_text(f"name: s\nproblems:\n{entry}")
    with pytest.raises(ProblemFormatError) as exc:
        load_problem_set(tmp_path / "set.yaml")
    assert "did you mean" in str(exc.value) and "softmax" in str(exc.value)
