"""KernelBench-format tasks imported as problems (``leaderboards.kernelbench``, ``problems import-kernelbench``).

The tasks are hand-written files in the format (``kernelbench_tasks/``): a level-1 operator (matmul, an fp16 ReLU),
level-2 fusions (conv + bias + ReLU, GEMM + scale + GELU) and level-3 networks (a 2-layer MLP, a tiny CNN with batch
norm). Each imported problem loads as a valid folder, and its reference, run here in-process on the CPU, does what
the problem promises: the same inputs and weights from the same seed and others from another, its own output and the
template's pass the check, and a kernel that drops an operation or rounds to a lower precision fails it.
``problems validate --run`` (the sandboxed check) on all of them is the slow test at the end.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderboards.kernelbench import import_tasks, parse_task, problem_name
from leaderboards.problems import ProblemFormatError, load_problem
from runners.contract import DataType

torch = pytest.importorskip("torch")

TASKS = Path(__file__).parent / "kernelbench_tasks"
REPO = Path(__file__).resolve().parents[2]
ALL = sorted(TASKS.glob("*.py"))


def module(folder: Path, file: str) -> types.ModuleType:
    """A problem file loaded as the evaluator loads it (``_lib`` importable beside it)."""
    mod = types.ModuleType(f"kb_{folder.name}_{file.replace('/', '_').removesuffix('.py')}")
    sys.path.insert(0, str(REPO / "problems"))
    try:
        exec(compile((folder / file).read_text(), str(folder / file), "exec"), mod.__dict__)
    finally:
        sys.path.remove(str(REPO / "problems"))
    return mod


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("kb")
    return {i.source.stem: i.folder for i in import_tasks(ALL, out)}


def test_every_task_becomes_a_valid_problem_folder(imported: dict[str, Path]) -> None:
    assert sorted(imported) == [p.stem for p in ALL]
    for name, folder in imported.items():
        problem = load_problem(folder)
        assert problem.name == name
        assert set(problem.templates) == {"pytorch"} and "ModelNew" in problem.templates["pytorch"]
        assert len(problem.task.tests) == 3 and len(problem.task.benchmarks) == 1
        assert "Model.forward" in problem.task.description and 'data["state_dict"]' in problem.task.description
    relu = load_problem(imported["level1_relu"]).task
    assert relu.dtype is DataType.FP16
    assert relu.benchmarks[0] == {"batch_size": 16, "dim": 16384, "seed": 1100}  # the task's own shapes
    assert [c["batch_size"] for c in relu.tests] == [1, 2, 3]
    assert max(c["dim"] for c in relu.tests) <= 64  # sizes divided down for the CPU


def test_shapes_become_case_keys_and_computed_constants_follow(imported: dict[str, Path]) -> None:
    task = parse_task(TASKS / "level2_conv_bias_relu.py")
    # `height, width = 64, 64` are two constants; bias_shape = (out_channels, 1, 1) is computed, not a key
    assert list(task.constants) == ["batch_size", "in_channels", "out_channels", "height", "width", "kernel_size"]
    assert parse_task(TASKS / "level1_relu.py").constants == {"batch_size": 16, "dim": 16384}  # dim = 1024 * 16
    ref = module(imported["level2_conv_bias_relu"], "reference.py")
    data = ref.generate_input(seed=5, batch_size=2, in_channels=3, out_channels=4, height=9, width=7, kernel_size=3)
    assert data["init_inputs"] == (3, 4, 3, (4, 1, 1))  # bias_shape follows out_channels
    assert data["state_dict"]["bias"].shape == (4, 1, 1) and data["inputs"][0].shape == (2, 3, 9, 7)


def test_the_reference_carries_the_task_readably_and_exactly(imported: dict[str, Path], tmp_path: Path) -> None:
    reference = (imported["level3_mlp"] / "reference.py").read_text()
    assert "TASK = r'''# ruff: noqa" in reference and "        return self.network(x)\n" in reference
    assert 'batch_size = __case__["batch_size"]' not in reference  # the rewrite keeps the file's own quotes
    assert "batch_size = __case__['batch_size']" in reference
    quoted = tmp_path / "quoted.py"  # a triple quote and backslashes in the task: written with repr instead
    quoted.write_text((TASKS / "level1_relu.py").read_text().replace('"""ReLU', "'''ReLU\\n").replace(
        'vectors."""', "vectors.'''"))  # fmt: skip
    (folder,) = [i.folder for i in import_tasks([quoted], tmp_path / "out")]
    ref = module(folder, "reference.py")
    assert parse_task(quoted).rewritten == ref.TASK
    data = ref.generate_input(seed=1, batch_size=2, dim=8)
    assert ref.check_implementation(data, ref.ref_kernel(data)) == (True, "")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, torch.Tensor):
        return bool(torch.equal(a, b))
    return bool(a == b)


@pytest.mark.parametrize("name", [p.stem for p in ALL])
def test_reference_and_template_pass_and_the_seed_decides(imported: dict[str, Path], name: str) -> None:
    folder = imported[name]
    ref, template = module(folder, "reference.py"), module(folder, "templates/pytorch.py")
    case = load_problem(folder).task.tests[0]
    data, again = ref.generate_input(**case), ref.generate_input(**case)
    assert _equal(data, again)  # the harness regenerates inputs to check: the seed alone decides them
    other = ref.generate_input(**{**case, "seed": case["seed"] + 1})
    assert not _equal(data["inputs"], other["inputs"])
    if data["state_dict"]:
        assert not _equal(data["state_dict"], other["state_dict"])  # the weights come from the seed too
    assert ref.check_implementation(data, ref.ref_kernel(data)) == (True, "")
    assert ref.check_implementation(data, template.custom_kernel(data)) == (True, "")
    ok, why = ref.check_implementation(data, None)
    assert not ok and why


WRONG = {
    # what a plausible wrong kernel returns, given the right answer and the data
    "level1_matmul": lambda out, data: (data["inputs"][0].bfloat16() @ data["inputs"][1].bfloat16()).float(),
    "level1_relu": lambda out, data: data["inputs"][0].clone(),  # ReLU left out
    "level2_conv_bias_relu": lambda out, data: out - data["state_dict"]["bias"].clamp(min=0),  # bias dropped (roughly)
    "level2_gemm_scale_gelu": lambda out, data: out / 0.5 * 0.25,  # the scale applied twice
    "level3_mlp": lambda out, data: out.relu(),  # a ReLU after the last layer
    "level3_tiny_cnn": lambda out, data: out.half().float() + out.abs().mean() * 0.05,  # drifted
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_kernel_fails_the_check(imported: dict[str, Path], name: str) -> None:
    ref = module(imported[name], "reference.py")
    case = load_problem(imported[name]).task.tests[1]
    data = ref.generate_input(**case)
    wrong = WRONG[name](ref.ref_kernel(data), data)
    ok, why = ref.check_implementation(ref.generate_input(**case), wrong)
    assert not ok and "elements differ" in why


def test_the_check_names_a_wrong_dtype_and_nan(imported: dict[str, Path]) -> None:
    ref = module(imported["level1_relu"], "reference.py")
    data = ref.generate_input(**load_problem(imported["level1_relu"]).task.tests[0])
    out = ref.ref_kernel(data)
    assert out.dtype == torch.float16
    assert ref.check_implementation(data, out.float()) == (False, "output dtype torch.float32, expected torch.float16")
    ok, why = ref.check_implementation(data, torch.full_like(out, float("nan")))
    assert not ok and "elements differ" in why


def test_a_file_not_in_the_format_is_named_with_what_it_lacks(tmp_path: Path) -> None:
    bad = tmp_path / "no_model.py"
    bad.write_text("import torch\n\nclass Net(torch.nn.Module):\n    pass\n\ndef get_inputs():\n    return []\n")
    with pytest.raises(ProblemFormatError) as err:
        import_tasks([bad, TASKS / "level1_relu.py"], tmp_path / "out")
    text = str(err.value)
    assert f"{bad}: Model: no class Model at module level" in text
    assert f"{bad}: get_init_inputs: no function get_init_inputs()" in text
    assert not (tmp_path / "out").exists()  # all or nothing: the good file was not written either
    no_forward = tmp_path / "no_forward.py"
    no_forward.write_text("class Model:\n    pass\n\ndef get_inputs():\n    return []\n\ndef get_init_inputs():\n"
                          "    return []\n")  # fmt: skip
    with pytest.raises(ProblemFormatError, match=r"Model\.forward: class Model has no forward method"):
        parse_task(no_forward)
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    with pytest.raises(ProblemFormatError, match=r"broken.py: line 1: syntax error"):
        parse_task(broken)
    seeded = tmp_path / "seeded.py"
    seeded.write_text((TASKS / "level1_relu.py").read_text() + "\nseed = 3\n")
    with pytest.raises(ProblemFormatError, match="a shape constant cannot be named 'seed'"):
        parse_task(seeded)
    with pytest.raises(ProblemFormatError, match="cannot be read"):
        parse_task(tmp_path / "missing.py")


def test_an_existing_folder_needs_force_and_names_are_sanitised(tmp_path: Path) -> None:
    import_tasks([TASKS / "level1_relu.py"], tmp_path)
    with pytest.raises(ProblemFormatError, match="exists already: pass --force"):
        import_tasks([TASKS / "level1_relu.py"], tmp_path)
    (tmp_path / "level1_relu" / "templates" / "pytorch.py").write_text("# edited\n")
    import_tasks([TASKS / "level1_relu.py"], tmp_path, force=True)
    assert "ModelNew" in (tmp_path / "level1_relu" / "templates" / "pytorch.py").read_text()
    assert problem_name(Path("19_ReLU (copy).py")) == "19_ReLU__copy"


def test_the_cli_imports_a_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from kernelcup.cli import build_app

    monkeypatch.chdir(tmp_path)
    args = ["problems", "import-kernelbench", *map(str, ALL), "--out", "kb", "--set", "kb.yaml"]
    r = CliRunner().invoke(build_app(), [*args, "--devices", "cpu,H100", "--deadline", "2030-01-01"])
    assert r.exit_code == 0, r.output
    assert "imported 6 task(s)" in r.output and "kernelcup problems validate --run kb/kb.yaml" in r.output
    problem_set = yaml.safe_load((tmp_path / "kb" / "kb.yaml").read_text())
    assert [p["directory"] for p in problem_set["problems"]] == [p.stem for p in ALL]
    assert problem_set["problems"][0]["devices"] == ["cpu", "H100"]
    r = CliRunner().invoke(build_app(), ["problems", "validate", "kb/kb.yaml"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(build_app(), ["problems", "import-kernelbench", str(tmp_path / "nope.py")])
    assert r.exit_code == 1 and "nope.py" in r.output and "cannot be read" in r.output


@pytest.mark.slow
def test_imported_problems_pass_validate_run(imported: dict[str, Path]) -> None:
    """The sandboxed reference check (``problems validate --run``) on each imported problem: generate twice,
    reference through its own check, None and NaN refused, every benchmark's inputs made with the secret seed too."""
    from typer.testing import CliRunner

    from kernelcup.cli import build_app

    for name in ("level1_matmul", "level2_gemm_scale_gelu", "level3_tiny_cnn"):
        r = CliRunner().invoke(build_app(), ["problems", "validate", "--run", str(imported[name])])
        assert r.exit_code == 0, r.output
        assert "1 reference(s) passed their own check" in r.output


@pytest.mark.slow
def test_the_template_and_a_wrong_model_new_through_the_sandboxed_harness(
    imported: dict[str, Path], tmp_path: Path
) -> None:
    """``kernelcup run`` on the CPU: the data dict (inputs, init args, state dict) crosses into the submission's
    process, the template's ModelNew passes, and one whose forward leaves out the ReLU is a wrong answer."""
    import json

    from typer.testing import CliRunner

    from kernelcup.cli import build_app

    folder = imported["level2_conv_bias_relu"]
    template = (folder / "templates" / "pytorch.py").read_text()
    wrong = tmp_path / "no_relu.py"
    wrong.write_text(template.replace("        return super().forward(*args)",
                                      "        x = self.conv(args[0])\n        return x + self.bias"))  # fmt: skip
    verdicts = {}
    for file in (folder / "templates" / "pytorch.py", wrong):
        r = CliRunner().invoke(build_app(), ["run", str(folder), str(file), "-d", "cpu", "--json"])
        verdicts[file.name] = json.loads(r.stdout)["verdict"]
    assert verdicts == {"pytorch.py": "accepted", "no_relu.py": "wrong_answer"}


def test_the_cli_names_a_bad_deadline_and_an_unwritable_set_before_losing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from kernelcup.cli import build_app

    monkeypatch.chdir(tmp_path)
    base = ["problems", "import-kernelbench", str(ALL[0]), "--out", "kb", "--set", "kb.yaml"]
    r = CliRunner().invoke(build_app(), [*base, "--deadline", "next friday"])
    assert r.exit_code == 2 and "next friday" in r.output and "2027-01-31" in r.output
    assert not (tmp_path / "kb").exists()  # refused before anything was written
    r = CliRunner().invoke(build_app(), [*base[:-1], "missing/kb.yaml"])
    assert r.exit_code == 2 and "cannot write the problem set" in r.output
    assert (tmp_path / "kb" / ALL[0].stem / "task.yml").is_file()  # the problem folders it wrote are kept
