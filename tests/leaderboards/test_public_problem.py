"""What of a problem leaves the server (``leaderboards.public_problem``): the served templates' name and first line,
which the directive parser reads, and a public folder without the held-out cases that runs as the stored problem."""

from __future__ import annotations

from pathlib import Path

import yaml

from leaderboards.directives import parse_directives
from leaderboards.problems import load_problem
from leaderboards.public_problem import problem_from_folder, public_folder, served_file_name, served_template

REPO = Path(__file__).resolve().parents[2]


def test_a_served_template_is_named_and_headed_for_its_board() -> None:
    assert served_file_name("vectoradd", "cuda-inline", "templates/cuda_inline.py") == "vectoradd_cuda_inline.py"
    assert served_file_name("vadd", "cuda", "templates/cuda.cu") == "vadd_cuda.cu"
    python = served_template("vadd", "vadd_pytorch.py", "def custom_kernel(data):\n    return data\n")
    assert python.startswith("#!POPCORN leaderboard vadd\n") and parse_directives(python).leaderboard == "vadd"
    cuda = served_template("vadd", "vadd_cuda.cu", "#include <cuda.h>\n")
    assert cuda.startswith("//!POPCORN leaderboard vadd\n") and parse_directives(cuda).leaderboard == "vadd"
    named = "#!kernelcup leaderboard other\ndef custom_kernel(data):\n    return data\n"
    assert served_template("vadd", "vadd_pytorch.py", named) == named  # its author's line stands, never a second


def test_the_public_folder_leaves_the_held_out_cases_home_and_runs_as_stored() -> None:
    problem = load_problem(REPO / "problems" / "vectoradd")
    snap = problem.snapshot()
    snap["task"] = {**snap["task"], "holdout": [{"size": 918273, "seed": 1}], "system_test_top": 3}
    folder = public_folder("vadd", snap)
    task = yaml.safe_load(folder.files["task.yml"])
    assert "holdout" not in task and "system_test_top" not in task
    assert not any("918273" in text for text in folder.files.values())
    assert folder.files["templates/pytorch.py"].startswith("#!POPCORN leaderboard vadd\n")
    again = problem_from_folder(folder.problem, folder.files)
    assert again.files == problem.files and again.task.tests == problem.task.tests  # its own _lib, as stored
    assert again.task.benchmarks == problem.task.benchmarks and not again.task.holdout
    assert public_folder("vadd", snap).fingerprint == folder.fingerprint != public_folder("other", snap).fingerprint
