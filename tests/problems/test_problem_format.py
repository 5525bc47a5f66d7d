"""The starter set and every problem folder meet the library's rules (issue 4), checked without running kernels."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from problem_catalog import PROBLEMS, STARTER, import_reference, parse_header, problem_dirs, python_problem_names

from leaderboards.problems import load_problem, load_problem_set
from runners.devices import peaks_for, roofline_bound

GPUS = {"H100", "A100", "L4", "T4", "B200"}
LIBRARIES = PROBLEMS / "libraries.yaml"
ADVANCED_SET = PROBLEMS / "advanced.yaml"
MULTIGPU = PROBLEMS / "multigpu.yaml"
LIBRARY = [
    "vectoradd", "vectorsum", "grayscale", "histogram", "prefixsum", "sort", "softmax", "rmsnorm", "matmul", "conv2d",
]
# The advanced set (issue 17): Hopper-class GPUs and the CPU; PyTorch and Triton templates.
ADVANCED = ["layernorm", "attention", "fp8_gemm", "grouped_gemm"]
ADVANCED_DEVICES = {"H100", "H200", "B200", "cpu"}
ROOFLINE_DTYPE = {"layernorm": "fp32", "attention": "bf16", "fp8_gemm": "fp8", "grouped_gemm": "bf16"}
# Case keys that are not sizes a kernel must handle at any value (head_dim is 64 or 128 by the problem's rules).
NOT_SIZES = ("seed", "contention", "head_dim")
# Test cases run on a 2-core CI machine through Triton's interpreter: keep each one's traffic small.
MAX_TEST_BYTES = 8 << 20


def _entries() -> dict[str, dict]:
    raw = yaml.safe_load(STARTER.read_text())
    return {e.get("name") or e["directory"]: e for e in raw["problems"]}


def test_starter_set_lists_the_library() -> None:
    names = set(_entries())
    assert set(LIBRARY) | {"vectoradd_cu"} <= names
    libraries = {e["directory"] for e in yaml.safe_load(LIBRARIES.read_text())["problems"]}
    assert libraries == {"matmul_cutlass", "matmul_tk"}, "the C++ library problems have a set of their own"
    advanced = {e["directory"] for e in yaml.safe_load(ADVANCED_SET.read_text())["problems"]}
    assert advanced == set(ADVANCED)
    multigpu = {e["directory"] for e in yaml.safe_load(MULTIGPU.read_text())["problems"]}
    assert multigpu == {"allreduce", "allgather_gemm"}, "the problems on several GPUs have a set of their own"
    models = {e["directory"] for e in yaml.safe_load((PROBLEMS / "models.yaml").read_text())["problems"]}
    assert models == {"llama_layer"}, "the model-level problems have a set of their own"
    policies = {e["directory"] for e in yaml.safe_load((PROBLEMS / "policies.yaml").read_text())["problems"]}
    assert policies == {"matmul_own"}, "the problems with a library policy have a set of their own"
    folders = {p.name for p in problem_dirs()} - {"vectoradd_cu"}
    assert folders <= names | libraries | advanced | multigpu | models | policies, "every problem folder is in a set"


def test_advanced_set_loads_and_validates() -> None:
    pset, problems = load_problem_set(ADVANCED_SET)
    assert set(problems) == set(ADVANCED)
    for entry in pset.problems:
        assert set(entry.devices) == ADVANCED_DEVICES, f"{entry.leaderboard_name}: devices {entry.devices}"
        assert entry.deadline > datetime(2030, 1, 1, tzinfo=UTC)
        dtype = problems[entry.leaderboard_name].task.dtype.value
        assert dtype == ROOFLINE_DTYPE[entry.leaderboard_name], "the peak that bounds the problem's flops"


def test_starter_set_loads_and_validates() -> None:
    missing = [e["directory"] for e in _entries().values() if not (PROBLEMS / e["directory"] / "task.yml").exists()]
    if missing:
        pytest.skip(f"not landed yet: {missing} (problems/vectoradd_cu is shipped with the native CUDA harness)")
    pset, problems = load_problem_set(STARTER)
    assert set(problems) == set(_entries())
    for entry in pset.problems:
        assert set(entry.devices) >= GPUS, f"{entry.leaderboard_name}: devices {entry.devices}"
        assert entry.deadline > datetime(2030, 1, 1, tzinfo=UTC)
        python = problems[entry.leaderboard_name].task.lang.value == "py"
        assert ("cpu" in entry.devices) == python, "Python problems run on the CPU too; native CUDA cannot"


def _complete_folder(name: str, templates: set[str]) -> tuple[set[str], list[Path]]:
    """Asserts what every problem folder holds; returns the names of its correct and the paths of its wrong
    solutions for the set's own rules."""
    problem = load_problem(PROBLEMS / name)
    task = problem.task
    assert len(task.tests) >= 5 and len(task.benchmarks) >= 3
    assert all(isinstance(c.get("seed"), int) for c in [*task.tests, *task.benchmarks]), "every case has a seed"
    assert templates <= set(problem.templates)
    for word in ("Input", "Return", "Check"):
        assert word.lower() in task.description.lower(), f"the description states the {word.lower()}"
    for path in (PROBLEMS / name / "solutions").glob("*/*.py"):
        expect, _, _ = parse_header(path)
        assert expect is not None, f"{path} declares its verdict in a '# expect:' line"
    correct = {p.name for p in (PROBLEMS / name / "solutions" / "correct").glob("*.py")}
    return correct, list((PROBLEMS / name / "solutions" / "wrong").glob("*.py"))


@pytest.mark.parametrize("name", LIBRARY)
def test_problem_folder_is_complete(name: str) -> None:
    correct, wrong = _complete_folder(name, {"pytorch", "triton", "cuda-inline"})
    assert {"pytorch.py", "triton.py"} <= correct
    assert len(wrong) >= 2
    assert any(p.stem in ("noop", "zeros", "empty", "unsorted") for p in wrong), "a solution that does no work"


@pytest.mark.parametrize("name", ADVANCED)
def test_advanced_problem_folder_is_complete(name: str) -> None:
    correct, wrong = _complete_folder(name, {"pytorch", "triton"})
    assert "pytorch.py" in correct and len(correct) >= 2, "a PyTorch solution and a fast one"
    assert len(wrong) >= 3 and any(p.stem == "zeros" for p in wrong), "a solution that does no work and two subtle ones"


def test_layernorm_tests_cover_both_dtypes() -> None:
    task = load_problem(PROBLEMS / "layernorm").task
    for cases in (task.tests, task.benchmarks):
        assert {c["dtype"] for c in cases} == {"float16", "bfloat16"}


def test_inline_cuda_solutions_for_at_least_four_problems() -> None:
    with_cuda = [n for n in LIBRARY if (PROBLEMS / n / "solutions" / "correct" / "cuda_inline.py").exists()]
    assert len(with_cuda) >= 4, with_cuda


@pytest.mark.parametrize("name", [*LIBRARY, *ADVANCED])
def test_tests_include_awkward_sizes(name: str) -> None:
    tests = load_problem(PROBLEMS / name).task.tests
    dims = [[v for k, v in c.items() if k not in NOT_SIZES and isinstance(v, int)] for c in tests]
    assert any(all(d <= 8 for d in case) for case in dims), "a tiny case"
    assert any(any(d > 64 and d % 2 for d in case) for case in dims), "a size that is no multiple of a block size"


@pytest.mark.parametrize("name", python_problem_names())
def test_speed_of_light_for_every_case(name: str) -> None:
    reference = import_reference(name)
    task = load_problem(PROBLEMS / name).task
    for case in [*task.tests, *task.benchmarks]:
        sol = reference.speed_of_light(**case)
        assert isinstance(sol["bytes"], int) and sol["bytes"] > 0
        assert isinstance(sol["flops"], int) and sol["flops"] >= 0
    for case in task.tests:
        assert reference.speed_of_light(**case)["bytes"] <= MAX_TEST_BYTES, f"test case {case} is too big for CI"
    largest = max(task.benchmarks, key=lambda c: reference.speed_of_light(**c)["bytes"])
    sol = reference.speed_of_light(**largest)
    h100 = peaks_for("NVIDIA H100 80GB HBM3")  # the H100 SXM row the runner bounds times with
    assert h100 is not None
    bound = roofline_bound(sol["bytes"], sol["flops"], h100, task.dtype)
    floor_s = bound[0] * 1e-9 if bound else 0.0
    assert floor_s >= 20e-6, f"the largest benchmark takes only {floor_s * 1e6:.1f} µs at the H100's peak"
    assert sol["bytes"] <= 4 << 30, "inputs and outputs must leave room for the check on a 24 GB L4"
