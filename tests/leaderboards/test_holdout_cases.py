"""Held-out cases in task.yml (issue 29): typed and checked like tests, run by ``validate --run``, carried only by a
system test's request, never by a competitor's own run nor stored where a surface reads the task."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from helpers import write_problem

from leaderboards.problems import ProblemFormatError, load_problem
from leaderboards.snapshot import fingerprint, problem_from_snapshot, snapshot
from leaderboards.sync import reference_request
from runners.contract import Mode, Verdict

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "problems" / "vectoradd"
HELD_OUT = [{"size": 31337, "seed": 77}, {"size": 4099, "seed": 78}]


def with_holdout(root: Path, holdout: list, **extra: object) -> Path:
    path = write_problem(root)
    task = yaml.safe_load((path / "task.yml").read_text())
    task.update(holdout=holdout, **extra)
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def test_holdout_cases_load_typed_like_tests(tmp_path: Path) -> None:
    problem = load_problem(with_holdout(tmp_path, HELD_OUT))
    assert problem.task.holdout == HELD_OUT
    assert problem.task.cases("holdout", 1) == HELD_OUT


@pytest.mark.parametrize(
    ("holdout", "words"),
    [
        ([{"size": "2020-01-01", "seed": 1, "when": {"a": 1}}], "holdout.0"),
        ([{"sizes": 3, "seed": 1}], "'sizes' is not a parameter"),
        ([{"seed": 1}], "lacks 'size'"),
    ],
)
def test_a_bad_holdout_case_names_itself(tmp_path: Path, holdout: list, words: str) -> None:
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(with_holdout(tmp_path, holdout))
    assert words in str(exc.value)
    assert "holdout" in str(exc.value)


def test_task_yml_never_travels_with_holdout_cases(tmp_path: Path) -> None:
    path = with_holdout(tmp_path, HELD_OUT, files=["reference.py", "task.yml"])
    with pytest.raises(ProblemFormatError, match=r"cannot list task\.yml in files"):
        load_problem(path)


def test_a_competitors_run_never_carries_a_holdout_case(tmp_path: Path) -> None:
    problem = load_problem(with_holdout(tmp_path, HELD_OUT))
    for mode in Mode:
        request = problem.request("s.py", b"x", mode, device="cpu", device_name="cpu", seed=5)
        text = request.model_dump_json()
        assert "31337" not in text and "4099" not in text, mode
    system = problem.system_test_request("s.py", b"x", device="cpu", device_name="cpu")
    assert system.mode is Mode.TEST
    assert system.tests == HELD_OUT
    assert system.benchmarks == [] and system.baselines == []


def test_a_problem_without_holdout_keeps_its_snapshot_and_fingerprint(tmp_path: Path) -> None:
    plain = load_problem(write_problem(tmp_path / "a"))
    assert "holdout" not in plain.snapshot()["task"]
    held = load_problem(with_holdout(tmp_path / "b", HELD_OUT))
    assert held.snapshot()["task"]["holdout"] == HELD_OUT
    assert fingerprint(snapshot(plain)) == fingerprint(snapshot(held))  # held-out cases never reset a ranking
    assert problem_from_snapshot(held.snapshot()).task.holdout == HELD_OUT
    with pytest.raises(ProblemFormatError, match="no held-out case"):
        plain.system_test_request("s.py", b"x", device="cpu", device_name="cpu")


def test_validate_run_checks_the_reference_on_every_holdout_case(tmp_path: Path) -> None:
    from runners.entry import check_reference
    from runners.settings import RunnerSettings

    folder = tmp_path / "vectoradd"
    shutil.copytree(FIXTURE, folder)
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["holdout"] = [{"size": 5, "seed": 40}, {"size": 3, "seed": 41}]
    (folder / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    request = reference_request(load_problem(folder))
    assert request.tests[-2:] == task["holdout"]
    settings = RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True)
    assert check_reference(request, settings=settings).verdict is Verdict.ACCEPTED

    reference = (folder / "reference.py").read_text()
    (folder / "reference.py").write_text(
        reference + "\n_gen = generate_input\n\ndef generate_input(size, seed):\n"
        "    if seed == 41:\n        raise ValueError('no such held-out input')\n    return _gen(size, seed)\n"
    )
    result = check_reference(reference_request(load_problem(folder)), settings=settings)
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert "no such held-out input" in result.message


@pytest.mark.parametrize("top", [0, True, "10", 1001])
def test_system_test_top_is_a_whole_number_from_1_to_1000(tmp_path: Path, top: object) -> None:
    with pytest.raises(ProblemFormatError, match="system_test_top"):
        load_problem(with_holdout(tmp_path, HELD_OUT, system_test_top=top))
    assert "system_test_top" not in load_problem(with_holdout(tmp_path / "b", HELD_OUT)).snapshot()["task"]


def test_held_out_cases_run_only_at_their_world_size(tmp_path: Path) -> None:
    from leaderboards.holdout import holdout_cases_on

    path = with_holdout(tmp_path, [{"size": 5, "seed": 1, "world_size": 2}, {"size": 6, "seed": 2, "world_size": 2}])
    reference = (path / "reference.py").read_text()
    (path / "reference.py").write_text(
        reference.replace("def generate_input(size, seed):", "def generate_input(size, seed, **_):")
    )
    problem = load_problem(path)
    assert problem.task.multi_rank
    assert [holdout_cases_on(problem, d) for d in ("H100x2", "H100x4", "cpu")] == [2, 0, 0]  # none: no system test
    request = problem.system_test_request("s.py", b"x", device="cuda", device_name="H100x2")
    assert request.tests == [{"size": 5, "seed": 1}, {"size": 6, "seed": 2}] and request.world_size == 2
