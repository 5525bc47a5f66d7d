"""The red team of the problem loader, validator and KernelBench importer (2026-11-29): each weakness as the case
that got through, refused now with an error naming the file, the field and the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from helpers import write_problem

from leaderboards.problems import ProblemFormatError, load_problem

REPO = Path(__file__).resolve().parents[2]
HELD_OUT = [{"size": 31337, "seed": 77}, {"size": 4099, "seed": 78}]


def problem(root: Path, **fields: object) -> Path:
    """The helpers' valid problem with ``fields`` set in its task.yml."""
    path = write_problem(root)
    task = yaml.safe_load((path / "task.yml").read_text())
    task.update(fields)
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def refused(path: Path) -> str:
    with pytest.raises(ProblemFormatError) as exc:
        load_problem(path)
    return str(exc.value)


# -- 1. held-out cases never travel in a copy of task.yml --------------------------------------------------------


def test_a_link_to_task_yml_under_another_name_is_refused(tmp_path: Path) -> None:
    path = problem(tmp_path, holdout=HELD_OUT, files=["reference.py", "t.yml"])
    os.symlink("task.yml", path / "t.yml")
    message = refused(path)
    assert "files: 't.yml' is task.yml itself" in message and "leave it out" in message


def test_a_template_naming_task_yml_is_refused(tmp_path: Path) -> None:
    path = problem(tmp_path, holdout=HELD_OUT, templates={"pytorch": "templates/pytorch.py", "triton": "task.yml"})
    assert "templates.triton: 'task.yml' is task.yml itself" in refused(path)


def test_a_copy_of_task_yml_or_a_file_quoting_a_held_out_case_is_refused(tmp_path: Path) -> None:
    path = problem(tmp_path, holdout=HELD_OUT, files=["reference.py", "copy.yml"])
    (path / "copy.yml").write_text((path / "task.yml").read_text())
    message = refused(path)
    assert "copy.yml: files: holds the held-out case holdout.0" in message
    path = problem(tmp_path / "b", holdout=HELD_OUT)
    template = path / "templates" / "pytorch.py"
    template.write_text(template.read_text() + '\nCASES = [{"seed": 78, "size": 4099}]\n')
    assert "templates.pytorch: holds the held-out case holdout.1" in refused(path)
    template.write_text(template.read_text() + "\n# run(size=31337,\n#     seed=77)\n")
    assert "holdout.0" in refused(path)


def test_the_numbers_of_a_held_out_case_apart_are_not_a_leak(tmp_path: Path) -> None:
    path = problem(tmp_path, holdout=HELD_OUT)
    template = path / "templates" / "pytorch.py"
    template.write_text(template.read_text() + "\nSIZE = 31337\nBLOCK = 77\n" + "#\n" * 300 + "seed = 77\n")
    load_problem(path)


@pytest.mark.parametrize("name", sorted(p.parent.name for p in (REPO / "problems").glob("*/task.yml")))
def test_the_repositorys_problems_quote_no_held_out_case(name: str) -> None:
    load_problem(REPO / "problems" / name)


# -- 2. a KernelBench constant's arithmetic is bounded -------------------------------------------------------------

KB_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple matmul."""

    def forward(self, a, b):
        return a @ b


M = {value}
N = 2048


def get_inputs():
    return [torch.randn(M, N), torch.randn(N, M)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("(((((9**64)**64)**64)**64)**64)", "9**64, an integer of about 256 bits"),
        ("2**64 * 2**64 * 2**64", "at most 64"),
        ("3 ** 40 * 3 ** 40", "an integer of 127 bits"),
        ("1 << 100", "1 << 100"),
        ("123456789012345678901234567890", "an integer of 97 bits"),
    ],
)
def test_a_kernelbench_constant_over_64_bits_is_refused_at_once(tmp_path: Path, value: str, words: str) -> None:
    import time

    from leaderboards.kernelbench import parse_task

    file = tmp_path / "task.py"
    file.write_text(KB_TASK.format(value=value))
    start = time.monotonic()
    with pytest.raises(ProblemFormatError) as exc:
        parse_task(file)
    assert time.monotonic() - start < 1.0
    assert f"{file}: M: line 12: the value reaches" in str(exc.value) and words in str(exc.value)
    assert "write one that fits in 64 bits" in str(exc.value)


def test_kernelbench_sizes_of_up_to_64_bits_still_read(tmp_path: Path) -> None:
    from leaderboards.kernelbench import parse_task

    file = tmp_path / "task.py"
    file.write_text(KB_TASK.format(value="2**20 * 4 - (1 << 3) + -1"))
    assert parse_task(file).constants == {"M": 2**22 - 9, "N": 2048}
    file.write_text(KB_TASK.format(value="2**63 - 1"))
    assert parse_task(file).constants["M"] == 2**63 - 1


# -- 3. held-out cases are new cases --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("holdout", "words"),
    [
        ([{"size": 3, "seed": 1}], "holdout.0 is the same case as tests.0"),
        ([{"seed": 3, "size": 1000}], "holdout.0 is the same case as benchmarks.1"),
        ([*HELD_OUT, {"size": 4099, "seed": 78}], "holdout.2 is the same case as holdout.1"),
    ],
)
def test_a_held_out_case_equal_to_another_case_is_refused(tmp_path: Path, holdout: list, words: str) -> None:
    message = refused(problem(tmp_path, holdout=holdout))
    assert words in message and "change a size or its seed, or drop it" in message


def test_a_held_out_case_differing_only_in_its_seed_is_new(tmp_path: Path) -> None:
    load_problem(problem(tmp_path, holdout=[{"size": 3, "seed": 9}, {"size": 3, "seed": 10}]))


# -- 4. a library policy allows the submission's own kernels --------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ({"deny": ["own"]}, "library_policy denies 'own', the submission's own kernels"),
        ({"deny": ["cublas", "own"]}, "deny the libraries instead"),
        ({"allow": ["aten"]}, "allow list (aten) lacks 'own'"),
        ({"allow": ["aten", "cub"]}, "add it, e.g. allow: [own, aten, cub]"),
    ],
)
def test_a_library_policy_denying_every_competitor_kernel_is_refused(tmp_path: Path, policy: dict, words: str) -> None:
    message = refused(problem(tmp_path, library_policy=policy))
    assert "task.yml: library_policy" in message and words in message


def test_a_library_policy_allowing_own_kernels_loads(tmp_path: Path) -> None:
    assert load_problem(problem(tmp_path, library_policy={"allow": ["own", "aten"]})).task.library_policy
    assert load_problem(problem(tmp_path / "b", library_policy={"deny": ["cublas"]})).task.library_policy


# -- 5. import-kernelbench writes only folders that validate --------------------------------------------------------


def test_a_long_or_dirty_docstring_makes_a_description_that_validates(tmp_path: Path) -> None:
    from leaderboards.kernelbench import import_tasks
    from leaderboards.problem_rules import MAX_TEXT_CHARS

    long_doc = tmp_path / "long_doc.py"
    long_doc.write_text(KB_TASK.format(value="1024").replace("Simple matmul.", "d" * 9000))
    dirty = tmp_path / "dirty.py"
    dirty.write_text(
        KB_TASK.format(value="1024").replace("Simple matmul.", "a\x1b[31m b\u202e c").replace("\n", "\r\n")
    )
    done = import_tasks([long_doc, dirty], tmp_path / "out")
    for item in done:
        description = load_problem(item.folder).task.description
        assert len(description) <= MAX_TEXT_CHARS and "\x1b" not in description and "\u202e" not in description
        assert "\r" not in description
    assert "(the task's docstring goes on)" in load_problem(done[0].folder).task.description
    assert "a\ufffd[31m b\ufffd c" in load_problem(done[1].folder).task.description


def test_an_import_that_would_not_validate_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from leaderboards import kernelbench

    file = tmp_path / "task.py"
    file.write_text(KB_TASK.format(value="1024"))
    made = kernelbench.problem_files
    monkeypatch.setattr(kernelbench, "_description", lambda task: "x\x07")
    assert kernelbench.problem_files is made
    with pytest.raises(ProblemFormatError) as exc:
        kernelbench.import_tasks([file], tmp_path / "out")
    message = str(exc.value)
    assert f"{file}: the problem it makes would not validate: task/task.yml: description: " in message
    assert "U+0007" in message and "edit the task file" in message
    assert not (tmp_path / "out").exists()


def test_a_kernelbench_constant_cannot_be_named_case(tmp_path: Path) -> None:
    from leaderboards.kernelbench import parse_task

    file = tmp_path / "task.py"
    file.write_text(KB_TASK.format(value="1024") + "__case__ = 5\n")
    with pytest.raises(ProblemFormatError, match="__case__: a shape constant cannot be named '__case__': rename it"):
        parse_task(file)


# -- 6. import-kernelbench names a path in the way -------------------------------------------------------------------


BLOCKS = [
    ("task", "is a file where the import needs a folder (for task/"),
    ("task/templates", "is a file where the import needs a folder"),
    ("task/reference.py/", "is a folder where the import writes a file"),
]


@pytest.mark.parametrize(("block", "words"), BLOCKS)
def test_a_path_in_the_way_of_an_import_is_named(tmp_path: Path, block: str, words: str) -> None:
    from leaderboards.kernelbench import import_tasks

    file = tmp_path / "task.py"
    file.write_text(KB_TASK.format(value="1024"))
    out = tmp_path / "out"
    target = out / block.rstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.mkdir() if block.endswith("/") else target.write_text("x")
    with pytest.raises(ProblemFormatError) as exc:
        import_tasks([file], out, force=True)
    assert f"{target}: {words}" in str(exc.value) and "another --out" in str(exc.value)


def test_the_cli_names_a_file_in_the_way(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kernelcup.cli import build_app

    file = tmp_path / "task.py"
    file.write_text(KB_TASK.format(value="1024"))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "task").write_text("x")
    args = ["problems", "import-kernelbench", str(file), "--out", str(tmp_path / "out"), "--force"]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "is a file where the import needs a folder" in result.output and "imported" not in result.output


# -- 7. the static check of reference.py is Python's own --------------------------------------------------------------


def test_a_reference_that_cannot_import_is_refused_by_the_static_check(tmp_path: Path) -> None:
    path = problem(tmp_path)
    reference = path / "reference.py"
    reference.write_text("import math\nfrom __future__ import annotations\n" + reference.read_text())
    message = refused(path)
    assert "reference.py: line 2: syntax error: from __future__ imports must occur at the beginning" in message


def test_a_leading_byte_order_mark_is_accepted_as_python_accepts_it(tmp_path: Path) -> None:
    path = problem(tmp_path)
    reference = path / "reference.py"
    reference.write_bytes(b"\xef\xbb\xbf" + reference.read_bytes())
    load_problem(path)


def test_a_nul_byte_is_named_by_its_line_and_column(tmp_path: Path) -> None:
    path = problem(tmp_path)
    reference = path / "reference.py"
    reference.write_text("x = 1\ny = '\0'\n" + reference.read_text())
    message = refused(path)
    assert "reference.py: line 2: column 6: a NUL byte (U+0000)" in message and "line None" not in message
    template = path / "templates" / "pytorch.py"
    reference.write_text(reference.read_text().replace("\0", ""))
    template.write_text("\0" + template.read_text())
    assert "templates.pytorch: the template is not valid Python: line 1: column 1: a NUL byte" in refused(path)


# -- 8. the rules on text and seeds reach every field ----------------------------------------------------------------

SPACE = {"params": {"size": {"type": "int", "min": 1, "max": 100}, "seed": {"type": "int", "min": 0, "max": 9}},
         "sizes": ["size"], "max_size": 100}  # fmt: skip


@pytest.mark.parametrize("seed", [True, "abc", [1, 2], -1, 1.5])
@pytest.mark.parametrize("kind", ["tests", "benchmarks", "holdout"])
def test_a_seed_is_a_non_negative_whole_number(tmp_path: Path, kind: str, seed: object) -> None:
    message = refused(problem(tmp_path, **{kind: [{"size": 3, "seed": seed}]}))
    assert f"{kind}.0" in message and "a seed is a non-negative whole number (seed: 1234)" in message


@pytest.mark.parametrize("text", ["a\x1b[31mb", "a\u202eb"])
def test_text_in_a_case_or_a_choice_follows_the_rules_on_text(tmp_path: Path, text: str) -> None:
    message = refused(problem(tmp_path, tests=[{"size": 3, "seed": 1, "mode": ["x", text]}]))
    assert "tests.0" in message and "'mode': the text has a" in message and text not in message
    space = {**SPACE, "params": {**SPACE["params"], "mode": {"type": "str", "choices": ["x", text]}}}
    message = refused(problem(tmp_path / "b", hack_space=space, tests=[{"size": 3, "seed": 1, "mode": "x"}]))
    assert "hack_space.params.mode.choices: the choice" in message and text not in message


def test_hack_space_sizes_cannot_name_the_seed(tmp_path: Path) -> None:
    message = refused(problem(tmp_path, hack_space={**SPACE, "sizes": ["size", "seed"]}))
    assert "hack_space.sizes names 'seed'" in message and "leave it out" in message
    load_problem(problem(tmp_path / "b", hack_space=SPACE))


def test_a_blank_description_or_baseline_label_is_refused(tmp_path: Path) -> None:
    assert "task.yml: description: is blank: say what the kernel computes" in refused(
        problem(tmp_path, description=" \n\t")
    )
    message = refused(problem(tmp_path / "b", baselines=[{"label": "  ", "function": "ref_kernel"}]))
    assert "task.yml: baselines: a baseline's label is blank" in message


# -- 9. validate's input and the messages of a reference that misbehaves ---------------------------------------------


def test_validate_of_a_task_yml_validates_its_folder(tmp_path: Path) -> None:
    from leaderboards.sync import validate_path

    path = problem(tmp_path)
    report = validate_path(path / "task.yml")
    assert report.issues == () and report.problems == (str(path),) and report.problem_sets == ()


def test_validate_of_a_folder_names_a_problem_linked_from_outside_without_following_it(tmp_path: Path) -> None:
    from leaderboards.sync import validate_path

    outside = problem(tmp_path / "elsewhere", description=" ")  # invalid: following the link would report it
    folder = tmp_path / "problems"
    write_problem(folder)
    os.symlink(outside, folder / "linked")
    report = validate_path(folder)
    assert report.problems == (str(folder / "add"),)
    assert [str(e) for e in report.issues] == [
        f"{folder / 'linked'}: is a symbolic link out of {folder}: not validated; validate what it leads to itself, "
        "or copy it in"
    ]


def test_a_reference_that_ends_the_process_or_floods_the_output_is_named(tmp_path: Path) -> None:
    from leaderboards.battery import battery_findings
    from leaderboards.sync import check_references
    from runners.contract import Mode, RunResult

    loaded = load_problem(problem(tmp_path))
    exited = "the evaluator exited with code 0 before it finished while starting"
    [issue] = check_references([loaded], lambda request: RunResult.infrastructure_error(Mode.TEST, exited))
    assert issue.file.endswith("reference.py") and exited in issue.message
    assert "the process ended inside reference.py's code (its import, generate_input, ref_kernel or " in issue.message
    assert "called os._exit() or exit(), or crashed; each must return" in issue.message
    flood = "the run was stopped: printed more than 8 MiB of output"
    report = battery_findings(loaded, [], RunResult.infrastructure_error(Mode.TEST, flood))
    [issue] = report.issues
    assert issue.file.endswith("reference.py") and flood in issue.message
    assert "so reference.py's code (its import, generate_input, ref_kernel or check_implementation) printed it" in (
        issue.message
    )


def test_a_description_writing_a_held_out_case_is_refused(tmp_path: Path) -> None:
    message = refused(problem(tmp_path, holdout=HELD_OUT, description="Add. Held out: size 4099 seed 78."))
    assert "task.yml: description: writes the held-out case holdout.1" in message and "take it out" in message
    load_problem(problem(tmp_path / "b", holdout=HELD_OUT, description="Add two vectors of up to 4099 elements."))
