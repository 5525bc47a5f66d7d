"""The second red team of problem folders (2026-11-29): the held-out check's cost on a hostile file, names that a
client cannot fetch or that carry terminal escapes, and hidden files that validate but cannot be downloaded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers import write_problem
from test_problem_redteam_2026_11_29 import HELD_OUT, problem, refused

from leaderboards.problems import _holds_case, load_problem

CASE = {"height": 3, "width": 5, "seed": 9}


@pytest.mark.parametrize(
    "text",
    [
        "x = 1\n# height" + " " * 32_000,  # 17.5 s before: two blank runs in a row backtracked over every split
        "# " + "height=3 " * 55_000 + "\n#" + " " * 300 + "\n# " + "width=5 " * 55_000,  # 162 s before: pairwise
    ],
    ids=["blanks-after-a-key", "many-matches-of-two-keys"],
)
def test_the_held_out_check_of_a_hostile_file_takes_a_moment_not_minutes(text: str) -> None:
    started = time.process_time()
    assert not _holds_case(text, CASE)
    assert time.process_time() - started < 5.0  # about 0.2 s here; minutes before


def test_the_held_out_check_still_finds_a_case_written_every_way() -> None:
    for text in ("height: 3, width: 5, seed: 9", "height  =  3 width=5 seed 9", '{"height":3,"width" : 5,"seed":9}'):
        assert _holds_case(text, CASE), text
    assert not _holds_case("height: 3" + " " * 300 + "width: 5 seed: 9", CASE)  # further apart than one case


@pytest.mark.parametrize(
    ("folder", "words"),
    [
        ("evil\x1b[31mRED", "not a usable problem name"),
        ("two\nlines", "not a usable problem name"),
        ("rtl\u202egnp", "not a usable problem name"),
        ("my.problem", "not a usable problem name"),
        ("<img src=x>", "not a usable problem name"),
        ("_private", "not a usable problem name"),
        ("x" * 101, "is 101 characters"),
    ],
)
def test_a_problem_folder_name_a_client_could_not_fetch_is_refused(tmp_path: Path, folder: str, words: str) -> None:
    message = refused(write_problem(tmp_path, name=folder))
    assert words in message and "rename the folder" in message
    assert "\x1b" not in message and "\u202e" not in message and "\n" not in message.split(":", 1)[0]


def test_usual_problem_names_load(tmp_path: Path) -> None:
    for folder in ("matmul", "1_Square_matmul", "fp8-gemm_v2"):
        assert load_problem(write_problem(tmp_path, name=folder)).name == folder


@pytest.mark.parametrize("rel", [".helpers.py", "sub/.hidden/x.py"])
def test_a_hidden_file_in_a_problem_is_refused_as_clients_refuse_it(tmp_path: Path, rel: str) -> None:
    path = problem(tmp_path, files=["reference.py", rel], holdout=HELD_OUT)
    (path / rel).parent.mkdir(parents=True, exist_ok=True)
    (path / rel).write_text("X = 1\n")
    message = refused(path)
    assert f"{rel!r} names a hidden file or folder" in message and "rename it" in message


def test_a_long_list_without_aliases_is_refused_for_its_length_not_blamed_on_aliases() -> None:
    from leaderboards.problem_files import load_yaml

    with pytest.raises(ValueError) as exc:
        load_yaml("[" + "1, " * 21_000 + "1]")
    assert "holds more than 20,000 values" in str(exc.value) and "keep long data out of it" in str(exc.value)


def test_an_expression_too_deep_for_the_parser_says_so_and_what_to_do(tmp_path: Path) -> None:
    path = problem(tmp_path)
    reference = path / "reference.py"
    reference.write_text(reference.read_text() + "\nX = " + "1 + " * 200_000 + "1\n")
    message = refused(path)
    assert "reference.py" in message and "nested or chained too deeply" in message and "split it" in message
