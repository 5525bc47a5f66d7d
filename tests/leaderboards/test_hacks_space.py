"""task.yml's ``hack_space`` and the strict check of one input hack against it (``leaderboards.hack_space``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from leaderboards.board_hacks import case_hash
from leaderboards.hack_space import HackSpace, hack_case_issues, normal_case
from leaderboards.hacks import check_hack
from leaderboards.problems import Task

SPACE = HackSpace.model_validate(
    {
        "params": {
            "rows": {"type": "int", "min": 1, "max": 4096},
            "cols": {"type": "int", "min": 1, "max": 4096},
            "scale": {"type": "float", "min": -10, "max": 10},
            "dtype": {"type": "str", "choices": ["float16", "bfloat16"]},
            "seed": {"type": "int", "min": 0, "max": 2**31 - 1},
        },
        "sizes": ["rows", "cols"],
        "max_size": 1 << 20,
    }
)
GOOD = {"rows": 33, "cols": 2049, "scale": 0.5, "dtype": "float16", "seed": 7}


def fields(case: object) -> dict[str, str]:
    return {f.field: f.message for f in hack_case_issues(SPACE, case)}


def test_a_case_inside_the_space_passes() -> None:
    assert hack_case_issues(SPACE, GOOD) == []
    assert hack_case_issues(SPACE, {**GOOD, "scale": 3}) == []  # an integer is a fine float


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"rows": 0}, "rows", "outside 1 .. 4096"),
        ({"rows": 4097}, "rows", "outside 1 .. 4096"),
        ({"rows": 2.0}, "rows", "not a whole number"),
        ({"rows": True}, "rows", "a boolean"),
        ({"rows": "33"}, "rows", "not a whole number"),
        ({"scale": float("nan")}, "scale", "not finite"),
        ({"scale": float("inf")}, "scale", "not finite"),
        ({"scale": 10.5}, "scale", "outside -10.0 .. 10.0"),
        ({"dtype": "float32"}, "dtype", "not one of float16, bfloat16"),
        ({"extra": 1}, "extra", "not a parameter"),
        ({"rows": 4096, "cols": 4096}, "case", "above this problem's cap of 1,048,576"),
    ],
)
def test_a_case_outside_the_space_names_its_field(change: dict[str, object], field: str, words: str) -> None:
    assert words in fields({**GOOD, **change})[field]


def test_a_missing_parameter_and_a_non_object_are_named() -> None:
    assert "missing" in fields({k: v for k, v in GOOD.items() if k != "seed"})["seed"]
    assert "object" in fields([1, 2])["case"]


@pytest.mark.parametrize(
    ("space", "words"),
    [
        ({"params": {"n": {"type": "int", "min": 1}}}, "needs min and max"),
        ({"params": {"n": {"type": "int", "min": 5, "max": 1}}}, "above max"),
        ({"params": {"n": {"type": "int", "min": 0.5, "max": 1}}}, "whole numbers"),
        ({"params": {"n": {"type": "str"}}}, "choices"),
        ({"params": {"n": {"type": "bool", "min": 0, "max": 1}}}, "no min or max"),
        ({"params": {"n": {"type": "float", "min": 0, "max": 1}}, "sizes": ["n"]}, "not an int parameter"),
        ({"params": {"n": {"type": "int", "min": 0, "max": 1}}, "max_size": 2**40}, "less than or equal"),
    ],
)
def test_a_bad_space_is_refused_when_the_problem_loads(space: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        HackSpace.model_validate(space)


def test_the_space_must_name_the_parameters_of_the_tests() -> None:
    task = {"description": "x", "tests": [{"size": 3, "seed": 1}], "benchmarks": [{"size": 9, "seed": 2}]}
    space = {"params": {"size": {"type": "int", "min": 1, "max": 10}}, "sizes": ["size"]}
    with pytest.raises(ValidationError, match=r"must be the tests' parameters of generate_input \(seed, size\)"):
        Task.model_validate({**task, "hack_space": space})
    both = {"params": {**space["params"], "seed": {"type": "int", "min": 0, "max": 9}}, "sizes": ["size"]}
    assert Task.model_validate({**task, "hack_space": both}).hack_space is not None
    with pytest.raises(ValidationError, match="sizes is required"):  # a hack's run is bounded by its sizes' cap
        Task.model_validate({**task, "hack_space": {"params": both["params"]}})
    stored = Task.model_validate({**task, "hack_space": {"params": both["params"]}}, context={"stored": True})
    assert stored.hack_space is not None  # a board synced before the rule still loads (and takes no hack)


def test_one_case_written_two_ways_is_one_case() -> None:
    """Red team, 2026-11-29: {"scale": 1} and {"scale": 1.0} hashed apart, so a case ran twice (and -0.0 beside 0.0)."""
    as_int, as_float, negative_zero, zero = (dict(GOOD, scale=v) for v in (1, 1.0, -0.0, 0))
    assert not fields(as_int) and not fields(negative_zero)
    assert case_hash(normal_case(SPACE, as_int)) == case_hash(normal_case(SPACE, as_float))
    assert case_hash(normal_case(SPACE, negative_zero)) == case_hash(normal_case(SPACE, zero))
    assert normal_case(SPACE, as_int)["rows"] == 33 and isinstance(normal_case(SPACE, as_int)["rows"], int)
    problem = SimpleNamespace(name="p", task=SimpleNamespace(hack_space=SPACE))  # what check_hack reads
    assert case_hash(check_hack(problem, as_int)) == case_hash(check_hack(problem, as_float))  # type: ignore[arg-type]
