"""The shape-family and weak-reference lint (``leaderboards/battery_lint.py``), in process: what each flags, what
clears it (held-out cases outside the family, a strong baseline), the task.yml exemption, and the battery program's
count of what a reference reads, writes and computes. End to end through validate and sync: the battery_shape_family
and battery_weak_reference folders of test_problem_cases.py."""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderboards import battery_solution
from leaderboards.battery_lint import WEAK_FACTOR, shape_family, shape_family_lint, weak_reference_lint
from leaderboards.problems import Problem, load_problem

CASES = Path(__file__).parent / "problem_cases"


def fixture(name: str, tmp_path: Path, **task_changes: Any) -> Problem:
    """The fixture folder ``name`` laid over _base's problem, with ``task_changes`` applied to its task.yml."""
    folder = shutil.copytree(CASES / "_base" / "add", tmp_path / name)
    for path in (CASES / name / "add").iterdir():
        shutil.copy(path, folder / path.name)
    if task_changes:
        task = yaml.safe_load((folder / "task.yml").read_text())
        (folder / "task.yml").write_text(yaml.safe_dump({**task, **task_changes}, sort_keys=False))
    return load_problem(folder)


def work_lines(problem: Problem, monkeypatch: pytest.MonkeyPatch) -> str:
    """What the battery's program prints about the reference's work, run in this process."""
    monkeypatch.setattr(battery_solution, "FILES", {r: t for r, t in problem.files.items() if r.endswith(".py")})
    monkeypatch.setattr(battery_solution, "TESTS", problem.task.cases("tests", 1))
    monkeypatch.setattr(battery_solution, "BENCHMARKS", problem.task.cases("benchmarks", 1))
    monkeypatch.setattr(battery_solution, "BASELINES", [b.function for b in problem.task.baselines])
    monkeypatch.setattr(battery_solution, "_reference", None)
    monkeypatch.setattr(sys, "path", list(sys.path))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        battery_solution.report_reference_work()
    return out.getvalue()


def test_a_family_is_each_size_by_its_alignment() -> None:
    assert shape_family({"m": 4096, "n": 1024, "seed": 7, "world_size": 2}) == (("m", 128), ("n", 128))
    assert shape_family({"m": 1000, "dtype": "float16", "flag": True}) == (("m", 8),)


def test_ranked_cases_of_one_family_warn_until_a_held_out_case_leaves_it(tmp_path: Path) -> None:
    (warning,) = shape_family_lint(fixture("battery_shape_family", tmp_path / "a"))
    assert "all one shape family (cols a multiple of 128, rows a multiple of 128)" in warning.message
    assert "e.g. {rows: 1023, cols: 4095, seed: 3}" in warning.message and warning.file.endswith("task.yml")
    inside = fixture("battery_shape_family", tmp_path / "b", holdout=[{"rows": 256, "cols": 128, "seed": 5}])
    assert "its 1 held-out cases are in it too" in shape_family_lint(inside)[0].message
    outside = fixture("battery_shape_family", tmp_path / "c", holdout=[{"rows": 255, "cols": 128, "seed": 5}])
    assert shape_family_lint(outside) == []


def test_benchmarks_of_several_families_pass(tmp_path: Path) -> None:
    benchmarks = [{"rows": 1024, "cols": 4096, "seed": 3}, {"rows": 1000, "cols": 4096, "seed": 4}]
    assert shape_family_lint(fixture("battery_shape_family", tmp_path, benchmarks=benchmarks)) == []


def test_an_exemption_with_its_reason_silences_the_item(tmp_path: Path) -> None:
    reason = "the benchmark shapes are the model's own; the tests cover other sizes"
    exempt = fixture("battery_shape_family", tmp_path, lint_exempt=[{"lint": "shape_family", "reason": reason}])
    assert shape_family_lint(exempt) == []
    with pytest.raises(Exception, match="at least 20 characters"):
        fixture("battery_shape_family", tmp_path / "short", lint_exempt=[{"lint": "shape_family", "reason": "no"}])


def test_the_weak_reference_is_counted_at_benchmark_size_with_fake_tensors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = fixture("battery_weak_reference", tmp_path)
    lines = work_lines(problem, monkeypatch)
    # benchmark 2 (4096 x 4096), per element: a float64 copy (read 4, write 8 bytes), x + x (x read once: 8 + 8),
    # out + x (8 + 8 + 8), out * 1.0 (8 + 8), a cast back (8 + 4)
    assert f"kernelcup-battery-work 0 {(12 + 16 + 24 + 16 + 12) * 4096 * 4096} - " in lines
    (warning,) = weak_reference_lint(problem, lines)
    assert "on benchmark 2 (rows=4096, cols=4096, seed=4)" in warning.message
    assert "10.0 times its speed_of_light" in warning.message and "needs a GPU timing" in warning.message
    exempt = fixture(
        "battery_weak_reference",
        tmp_path / "exempt",
        lint_exempt=[{"lint": "weak_reference", "reason": "a fixture whose reference is weak on purpose"}],
    )
    assert weak_reference_lint(exempt, lines) == []


def test_a_strong_baseline_clears_a_weak_reference(tmp_path: Path) -> None:
    problem = fixture("battery_weak_reference", tmp_path, baselines=[{"label": "torch", "function": "ref_kernel"}])
    light = 8 * 4096 * 4096
    weak = f"kernelcup-battery-work 0 {int(light * (WEAK_FACTOR + 1))} - {light} {4096 * 4096} b1"
    assert len(weak_reference_lint(problem, weak)) == 1
    assert weak_reference_lint(problem, f"{weak}\nkernelcup-battery-work 1 {light} - {light} {4096 * 4096} b1") == []
    # a submission's own stdout cannot add a case that does not exist, nor a baseline
    assert weak_reference_lint(problem, weak.replace(" b1", " b7") + "\nkernelcup-battery-work 5 1 - 1 1 b0") == []


def test_flops_count_at_the_peak_of_the_dtype_they_run_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A matmul of fp16 inputs done in fp32 runs on the CUDA cores (67 TFLOP/s), not the fp16 tensor cores."""
    folder = fixture("battery_weak_reference", tmp_path).path
    matmul = "def ref_kernel(data):\n    return data[0].float() @ data[0].float().T\n\n\ndef _weak(data):"
    (folder / "reference.py").write_text((folder / "reference.py").read_text().replace("def ref_kernel(data):", matmul))
    lines = work_lines(load_problem(folder), monkeypatch)
    assert f"float32:{2 * 4096 * 4096 * 4096} " in lines


def test_a_count_that_takes_too_long_falls_back_to_the_largest_test_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generate_input that loops in Python over a benchmark's elements would hold the battery's run: the count with
    fake tensors stops after WORK_SECONDS and the largest test case is counted instead."""
    folder = fixture("battery_weak_reference", tmp_path).path
    slow = "def generate_input(rows, cols, seed):\n    if rows > 100:\n        import time\n        time.sleep(60)\n"
    (folder / "reference.py").write_text((folder / "reference.py").read_text().replace(
        "def generate_input(rows, cols, seed):\n", slow
    ))  # fmt: skip
    monkeypatch.setattr(battery_solution, "WORK_SECONDS", 0.5)
    # pytest-timeout's own alarm is running, which the count never displaces; in the evaluator there is none
    monkeypatch.setattr(battery_solution.signal, "getitimer", lambda which: (0.0, 0.0))
    lines = work_lines(load_problem(folder), monkeypatch)
    assert lines.startswith("kernelcup-battery-work 0 ") and lines.strip().endswith(" t1")
