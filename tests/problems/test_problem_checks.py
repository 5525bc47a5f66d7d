"""Property tests of every problem's check, in-process on the CPU, from the cases each problem folder declares.

A problem's ``checks.py`` (``problems/<name>/checks.py``, docs/authoring.md section 6) names one mid-sized ``CASE``
(arguments of its ``generate_input``: big enough that every wrong variant shows, small enough to be fast on a CPU),
the outputs a correct kernel with a different order of operations would give (``CORRECT``: split-K, tree or blocked
reduction, sequential scan, TF32 inputs, FMA; each must pass) and its own versions of the mistakes (``WRONG``: each
must fail). Every problem also meets the generic mistakes below (zeros, a constant, one element left unwritten, an
off-by-one shift, a lower-precision computation), unless its ``WRONG`` has its own version under the same name.
These are the two sides of each tolerance that the comments in the references cite. The file is the problem's
test, not part of the problem: it never travels with a run nor leaves the server (``test_check_cases_stay_home``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from problem_catalog import (
    CheckCases,
    check_case_problems,
    import_check_cases,
    import_reference,
    python_problem_names,
    read_check_cases,
)

from leaderboards.problems import load_problem
from leaderboards.public_problem import public_folder

Mutation = Callable[[tuple, torch.Tensor], torch.Tensor]


# ---- outputs of a wrong kernel: must fail ----------------------------------------------------------------------
def _zeros(data: tuple, good: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(good)


def _constant(data: tuple, good: torch.Tensor) -> torch.Tensor:
    if good.numel() == 1 or not good.is_floating_point():
        return torch.full_like(good, 1)
    return torch.full_like(good, good.double().mean().item())


def _skip_one(data: tuple, good: torch.Tensor) -> torch.Tensor:
    """One element left as it was allocated (zero), the one with the largest magnitude so it cannot be zero."""
    bad = good.clone().flatten()
    bad[bad.double().abs().argmax()] = 0
    return bad.view(good.shape)


def _off_by_one(data: tuple, good: torch.Tensor) -> torch.Tensor:
    return good.roll(1, dims=-1) if good.dim() else good


def _lower_precision(data: tuple, good: torch.Tensor) -> torch.Tensor:
    lower = torch.bfloat16 if good.dtype != torch.bfloat16 else torch.float8_e4m3fn
    return good.to(lower).to(good.dtype)


GENERIC_WRONG: dict[str, Mutation] = {
    "zeros": _zeros, "constant": _constant, "skipped element": _skip_one, "off by one": _off_by_one,
    "lower precision": _lower_precision,
}
"""The mistakes every problem's check must catch; a problem's ``WRONG`` replaces one where it does not apply."""

PROBLEMS = check_case_problems()
CASES: dict[str, CheckCases] = {p: import_check_cases(p) for p in PROBLEMS}


def _wrong_cases(problem: str) -> dict[str, Mutation]:
    return dict(sorted({**GENERIC_WRONG, **CASES[problem].wrong}.items()))


@pytest.fixture(scope="module")
def prepared() -> dict[str, tuple]:
    """Each problem's reference, case data and reference output (computed once)."""
    out = {}
    with torch.device("cpu"):
        for problem in PROBLEMS:
            ref = import_reference(problem)
            data = ref.generate_input(**CASES[problem].case)
            out[problem] = (ref, data, ref.ref_kernel(data))
    return out


def test_problems_declare_their_check_cases() -> None:
    """The discovery finds the folders' files (an empty list would pass every test below vacuously)."""
    assert len(PROBLEMS) >= 14 and {"vectoradd", "matmul", "attention"} <= set(PROBLEMS)
    assert set(PROBLEMS) <= set(python_problem_names()), "checks.py runs a Python reference in-process"
    for problem in PROBLEMS:
        assert CASES[problem].correct, f"problems/{problem}/checks.py: CORRECT names no output that must pass"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CASE = {'size': 3, 'seed': 1}\nWRONGS = {}\n", "WRONGS is not one of CASE, CORRECT, WRONG"),
        ("CASE = {'size': 3}\n", "CASE must be a dict of generate_input's arguments with an integer seed"),
        ("CORRECT = {}\n", "CASE must be a dict"),
        ("CASE = {'seed': 1}\nCORRECT = {'fp32': 'not a function'}\n", "CORRECT must map a name (str) to a function"),
        ("CASE = {'seed': 1}\nWRONG = [lambda d, g: g]\n", "WRONG must map a name (str) to a function"),
    ],
)
def test_a_malformed_checks_file_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "checks.py"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"checks\.py: ") as caught:
        read_check_cases(path, f"kernelcup_check_cases_malformed_{abs(hash(text))}")
    assert message in str(caught.value)


def test_a_checks_file_may_leave_out_correct_and_wrong(tmp_path: Path) -> None:
    path = tmp_path / "checks.py"
    path.write_text("import torch\n\nCASE = {'size': 3, 'seed': 7}\n")
    assert read_check_cases(path, "kernelcup_check_cases_minimal") == CheckCases({"size": 3, "seed": 7}, {}, {})


@pytest.mark.parametrize("problem", PROBLEMS)
def test_check_cases_stay_home(problem: str) -> None:
    """checks.py is the problem's test, not the problem: it is not among the files that travel with every run, the
    stored snapshot (whose fingerprint versions a leaderboard: editing the cases re-versions nothing) or the public
    folder a competitor downloads (``kernelcup problems get``); ``problems sync`` reads the same snapshot."""
    loaded = load_problem(f"problems/{problem}")
    snap = loaded.snapshot()
    assert "checks.py" not in loaded.task.files and "checks.py" not in snap["files"]
    assert "checks.py" not in public_folder(problem, snap).files


@pytest.mark.parametrize("problem", PROBLEMS)
def test_reference_output_passes(problem: str, prepared: dict) -> None:
    ref, data, good = prepared[problem]
    ok, message = ref.check_implementation(data, good)
    assert ok, message


@pytest.mark.parametrize(("problem", "how"), [(p, how) for p in PROBLEMS for how in CASES[p].correct])
def test_correct_alternative_passes(problem: str, how: str, prepared: dict) -> None:
    ref, data, _ = prepared[problem]
    output = CASES[problem].correct[how](data)
    ok, message = ref.check_implementation(data, output)
    assert ok, f"{problem}: a correct {how} result was rejected: {message}"


@pytest.mark.parametrize(("problem", "how"), [(p, how) for p in PROBLEMS for how in _wrong_cases(p)])
def test_mistake_fails(problem: str, how: str, prepared: dict) -> None:
    ref, data, good = prepared[problem]
    output = _wrong_cases(problem)[how](data, good)
    if isinstance(output, torch.Tensor) and isinstance(good, torch.Tensor) and output.dtype == good.dtype:
        assert not torch.equal(output, good), f"the {how} mutation did not change the output; pick a better case"
    ok, message = ref.check_implementation(data, output)
    assert not ok, f"{problem}: a {how} result was accepted"
    assert message, "a failing check must say why"


@pytest.mark.parametrize("problem", PROBLEMS)
def test_inputs_are_deterministic_and_seeded(problem: str) -> None:
    ref = import_reference(problem)
    case = CASES[problem].case
    first, again = ref.generate_input(**case), ref.generate_input(**case)
    other = ref.generate_input(**{**case, "seed": case["seed"] + 1})
    for x, y, z in zip(first, again, other, strict=True):
        assert torch.equal(x, y) or (x.isnan().all() and y.isnan().all())
        if not x.isnan().all():
            assert not torch.equal(x, z), "a different seed must give different inputs"


@pytest.mark.parametrize("problem", PROBLEMS)
def test_check_rejects_wrong_type_shape_and_dtype(problem: str, prepared: dict) -> None:
    ref, data, good = prepared[problem]
    one_more = torch.cat([good.reshape(-1), good.reshape(-1)[:1]])
    for bad in ([1, 2, 3], good.tolist(), one_more, good.double()):
        ok, message = ref.check_implementation(data, bad)
        assert not ok and message


@pytest.mark.parametrize("problem", PROBLEMS)
def test_check_leaves_inputs_and_output_untouched(problem: str, prepared: dict) -> None:
    ref, data, good = prepared[problem]
    output, inputs = good.clone(), [t.clone() for t in data]
    ref.check_implementation(data, output)
    assert torch.equal(output, good)
    for before, after in zip(inputs, data, strict=True):
        assert torch.equal(before, after) or (before.isnan().all() and after.isnan().all())
