"""The problems' shared checking code (``problems/_lib``): what it says, and how it travels with each problem.

The loader bundles it into the files of every problem that imports it, so it goes with each run request, lies
beside reference.py in the evaluator's folder (never in the submission's), and counts in the fingerprint
(``tests/leaderboards/test_problem_lib_sync.py``). A problem set outside this repository gets the same library.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
import torch
from helpers import REFERENCE, write_problem, write_problem_set
from problem_catalog import PROBLEMS, import_lib, problem_dirs

from leaderboards.problem_lib import PROBLEM_LIB
from leaderboards.problems import ProblemFormatError, load_problem, load_problem_set
from runners.contract import Mode, Verdict
from runners.entry import run_request
from runners.entry.admission import write_job

LIB_FILES = sorted(f"_lib/{p.name}" for p in PROBLEM_LIB.glob("*.py"))

USES_LIB = """\
import torch
from _lib import Inputs, compare


def generate_input(size, seed):
    return (Inputs(seed).randn(size),)


def ref_kernel(data):
    (x,) = data
    return x * 2


def check_implementation(data, output):
    (x,) = data
    return compare(output, x.double() * 2, torch.float32, atol=0.0, rtol=0.0)
"""


# ---- what compare says -------------------------------------------------------------------------------------


def test_compare_names_the_wrong_type_shape_and_dtype() -> None:
    compare = import_lib().compare
    expected = torch.zeros(3, dtype=torch.float64)
    assert compare([0, 0, 0], expected, torch.float32, atol=0, rtol=0) == (False, "expected a torch.Tensor, got list")
    assert compare(torch.zeros(2), expected, torch.float32, atol=0, rtol=0) == (
        False,
        "output shape (2,), expected (3,)",
    )
    assert compare(torch.zeros(3, dtype=torch.float64), expected, torch.float32, atol=0, rtol=0) == (
        False,
        "output dtype torch.float64, expected torch.float32",
    )
    assert compare(torch.zeros(3), expected, torch.float32, atol=0, rtol=0) == (True, "")


def test_compare_counts_mismatches_and_names_the_first_with_its_allowed_error() -> None:
    compare = import_lib().compare
    expected = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    output = torch.tensor([[1.05, 2.5], [3.0, float("nan")]])
    ok, message = compare(output, expected, torch.float32, atol=0.1, rtol=0.0)
    assert not ok
    assert message == "2 of 4 elements differ; first at (0, 1): got 2.5, expected 2 (allowed error 0.1)"


def test_compare_takes_a_relative_and_a_per_element_tolerance() -> None:
    compare = import_lib().compare
    expected = torch.tensor([100.0, 1.0], dtype=torch.float64)
    assert compare(torch.tensor([101.0, 1.0]), expected, torch.float32, atol=0.0, rtol=0.01) == (True, "")
    assert not compare(torch.tensor([101.0, 1.0]), expected, torch.float32, atol=0.0, rtol=0.009)[0]
    per_element = torch.tensor([0.0, 0.5], dtype=torch.float64)
    assert compare(torch.tensor([100.0, 1.5]), expected, torch.float32, atol=per_element, rtol=0.0) == (True, "")
    assert not compare(torch.tensor([100.5, 1.0]), expected, torch.float32, atol=per_element, rtol=0.0)[0]


def test_compare_leaves_output_and_expected_untouched() -> None:
    compare = import_lib().compare
    expected = torch.tensor([1.0, -2.0], dtype=torch.float64)
    output = torch.tensor([1.5, -2.0])
    compare(output, expected, torch.float32, atol=0.0, rtol=0.0)
    assert output.tolist() == [1.5, -2.0] and expected.tolist() == [1.0, -2.0]


def test_inputs_are_seeded_on_the_default_device() -> None:
    lib = import_lib()
    first, again = lib.Inputs(7), lib.Inputs(7)
    assert torch.equal(first.randn(4, 3), again.randn(4, 3))
    assert torch.equal(first.rand(5), again.rand(5))
    assert torch.equal(first.randint(0, 256, 6, dtype=torch.uint8), again.randint(0, 256, 6, dtype=torch.uint8))
    out = first.nans(2, 2, dtype=torch.float16)
    assert out.dtype == torch.float16 and out.isnan().all(), "an output buffer a kernel must fill"
    assert torch.equal(first.randn(3), again.randn(3)), "nans() draws nothing from the generator"
    assert not torch.equal(lib.Inputs(8).randn(4, 3), lib.Inputs(7).randn(4, 3))
    with torch.device("meta"):  # the harness's default device wins (it hides CUDA for a cpu run)
        assert lib.device() == torch.device("meta")


# ---- the references use it -----------------------------------------------------------------------------------


@pytest.mark.parametrize("problem", [p.name for p in problem_dirs()])
def test_every_reference_imports_the_library_instead_of_a_copy(problem: str) -> None:
    loaded = load_problem(PROBLEMS / problem)
    tree = ast.parse(loaded.files["reference.py"])
    own = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert not own & {"_compare", "_device"}, "import compare and Inputs from _lib instead"
    for rel in LIB_FILES:
        assert loaded.files[rel] == (PROBLEM_LIB / Path(rel).name).read_text(), f"{rel} travels as it is"


# ---- bundling ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["from _lib import compare", "import _lib", "from _lib.compare import compare", "import _lib.inputs as inputs"],
)
def test_a_problem_that_imports_the_library_carries_it(tmp_path: Path, line: str) -> None:
    path = write_problem(tmp_path, "add", reference=REFERENCE.replace("def ref_kernel", f"{line}\n\n\ndef ref_kernel"))
    assert sorted(load_problem(path).files) == sorted(["reference.py", *LIB_FILES])


def test_an_import_inside_a_function_or_in_another_file_counts(tmp_path: Path) -> None:
    lazy = REFERENCE.replace("    return output == data", "    from _lib import compare\n    return output == data")
    assert "_lib/compare.py" in load_problem(write_problem(tmp_path, "lazy", reference=lazy)).files
    path = write_problem(tmp_path, "helper")
    (path / "util.py").write_text("from _lib import compare\n")
    task = (path / "task.yml").read_text()
    (path / "task.yml").write_text(task + "files: [reference.py, util.py]\n")
    assert "_lib/compare.py" in load_problem(path).files


def test_a_problem_that_does_not_import_it_does_not_carry_it(tmp_path: Path) -> None:
    for i, line in enumerate(("", "import _library\n", "from ._lib import compare\n")):
        path = write_problem(tmp_path, f"p{i}", reference=line + REFERENCE)
        assert sorted(load_problem(path).files) == ["reference.py"]


def test_a_problem_may_not_ship_its_own_lib_folder(tmp_path: Path) -> None:
    path = write_problem(tmp_path, "add")
    (path / "_lib").mkdir()
    (path / "_lib" / "compare.py").write_text("x = 1\n")
    (path / "task.yml").write_text((path / "task.yml").read_text() + "files: [reference.py, _lib/compare.py]\n")
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(path)
    assert f"{path}/task.yml: files: '_lib/compare.py': _lib/ is the name of kernelcup's shared checking code" in str(
        exc.value
    )


def test_a_missing_library_is_an_error_naming_the_file_that_imports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("leaderboards.problem_lib.PROBLEM_LIB", tmp_path / "nowhere" / "_lib")
    path = write_problem(tmp_path, "add", reference="from _lib import compare\n" + REFERENCE)
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(path)
    assert str(exc.value).startswith(f"{path}/reference.py: imports _lib, kernelcup's shared checking code, but ")


# ---- the runner ----------------------------------------------------------------------------------------------


def test_the_library_lies_beside_the_reference_for_the_evaluator_only(tmp_path: Path) -> None:
    submission = b"def custom_kernel(data): ...\n"
    request = load_problem(PROBLEMS / "vectoradd").request("s.py", submission, Mode.TEST, device="cpu")
    dirs = write_job(tmp_path / "job", request)
    for rel in LIB_FILES:
        assert (dirs.problem / rel).read_text() == (PROBLEM_LIB / Path(rel).name).read_text()
    assert sorted(p.name for p in dirs.submission.rglob("*")) == ["submission.py"], "the submission gets nothing"


@pytest.mark.slow
def test_a_problem_set_outside_the_repository_runs_with_the_library(tmp_path: Path) -> None:
    root = tmp_path / "elsewhere"
    write_problem(root, "double", tests=[{"size": 5, "seed": 1}, {"size": 9, "seed": 2}], reference=USES_LIB)
    set_file = write_problem_set(root, [{"directory": "double", "deadline": "2031-01-01", "devices": ["cpu"]}])
    assert PROBLEM_LIB.parent.parent not in set_file.parents
    _, problems = load_problem_set(set_file)
    problem = problems["double"]
    assert set(LIB_FILES) <= set(problem.files)

    def run(body: str):
        submission = f"def custom_kernel(data):\n    return {body}\n".encode()
        return run_request(problem.request("submission.py", submission, Mode.TEST, device="cpu"))

    accepted = run("data[0] * 2")
    assert accepted.verdict is Verdict.ACCEPTED, accepted.message
    wrong = run("data[0] * 3")
    assert wrong.verdict is Verdict.WRONG_ANSWER
    assert "5 of 5 elements differ; first at (0,)" in wrong.tests[0].message
    assert "(allowed error 0)" in wrong.tests[0].message


def test_the_library_is_found_without_the_problem_folder_beside_it(tmp_path: Path) -> None:
    """A copy of a repository problem loaded from elsewhere carries kernelcup's library, not a neighbour's."""
    copy = tmp_path / "softmax"
    shutil.copytree(PROBLEMS / "softmax", copy)
    (tmp_path / "_lib").mkdir()
    (tmp_path / "_lib" / "compare.py").write_text("def compare(*a, **k):\n    return True, ''\n")
    assert load_problem(copy).files["_lib/compare.py"] == (PROBLEM_LIB / "compare.py").read_text()
