"""What the evaluator accepts from a problem's check and speed of light (``runners.oracle.checking``): a verdict that
is a real truth value, a message that is short and safe to print, work counts that are whole 64-bit numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from runners.oracle.checking import MESSAGE_LIMIT, ProblemError, clean_message, normalise_check, speed_of_light_of


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        ((True, "ignored"), (True, "")),
        ((False, "differs at 3"), (False, "differs at 3")),
        ((False, ""), (False, "output differs from the reference")),
        (True, (True, "")),
        (False, (False, "output differs from the reference")),
        ("", (True, "")),
        ("bad", (False, "bad")),
        (None, (True, "")),
        ((torch.tensor(True), "x"), (True, "")),
        ((torch.tensor([False]), "x"), (False, "x")),
        ((np.bool_(False), "x"), (False, "x")),
    ],
)
def test_a_check_may_answer_in_the_documented_ways(returned: object, expected: tuple[bool, str]) -> None:
    assert normalise_check(returned) == expected


@pytest.mark.parametrize(
    "returned",
    [(math.nan, "x"), math.nan, (1, "x"), ("yes", "x"), (torch.tensor([True, False]), "x"), (torch.tensor(1.0), "x"),
     [True, ""], 0],
)  # fmt: skip
def test_a_verdict_that_is_no_truth_value_is_the_problems_mistake_never_a_pass(returned: object) -> None:
    """bool(nan) is True: a check returning NaN used to pass every submission (hostile-problem review, 2026-11-24)."""
    with pytest.raises(ProblemError, match="it must be a bool"):
        normalise_check(returned)


def test_a_check_message_is_cut_and_loses_terminal_controls() -> None:
    ok, message = normalise_check((False, "\x1b[2J\x1b]8;;http://x\x07link\u202eexe.txt " + "y" * 100_000))
    assert not ok and len(message) < MESSAGE_LIMIT + 40 and message.endswith("more characters)")
    assert "\x1b" not in message and "\x07" not in message and "\u202e" not in message
    assert clean_message("line 1\n\tline 2") == "line 1\n\tline 2"


def test_speed_of_light_must_be_whole_64_bit_numbers() -> None:
    assert speed_of_light_of(lambda size: {"bytes": 12 * size, "flops": float(size)}, {"size": 4}) == {
        "bytes": 48, "flops": 4}  # fmt: skip
    assert speed_of_light_of(lambda: {"bytes": 1}, {}) == {"bytes": 1}  # flops optional
    for bad, words in [
        ({"bytes": math.inf}, "'bytes' is inf"),
        ({"bytes": math.nan}, "'bytes' is nan"),
        ({"flops": -5}, "from 0 to 2**63 - 1"),
        ({"flops": 10**30}, "from 0 to 2**63 - 1"),
        ({"bytes": 1.5}, "from 0 to 2**63 - 1"),
        ({"bytes": True}, "must be a whole number"),
        ({"bytes": "12"}, "must be a whole number"),
    ]:
        with pytest.raises(ProblemError, match=words.replace("*", r"\*")):
            speed_of_light_of(lambda b=bad: b, {})
    with pytest.raises(ProblemError, match="must return a dict"):
        speed_of_light_of(lambda: [1, 2, 3], {})


def test_inputs_are_the_same_bit_for_bit_whatever_they_hold() -> None:
    """The reference check generates each test case twice; inputs may hold strings, None and containers, which
    torch.testing.assert_close cannot compare (a problem with a string input would have been refused)."""
    from runners.oracle.checking import same_value

    t = torch.tensor([1.0, math.nan])
    made = (t, "mode", None, 1.5, math.nan, {"k": [1, 2]}, torch.ones(2, dtype=torch.float8_e4m3fn))
    again = (t.clone(), "mode", None, 1.5, math.nan, {"k": [1, 2]}, torch.ones(2, dtype=torch.float8_e4m3fn))
    assert same_value(torch, made, again)
    assert not same_value(torch, (t, "mode"), (t, "other"))
    assert not same_value(torch, torch.ones(3), torch.ones(3, dtype=torch.float64))
    assert not same_value(torch, torch.tensor([0.0]), torch.tensor([-0.0]))  # bit for bit
    assert not same_value(torch, [1, 2], (1, 2))
