"""Property cases of sort's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"size": 50_001, "seed": 16}


def _swap_zero_signs(x: torch.Tensor) -> torch.Tensor:
    """-0.0 and 0.0 in any order among the zeros (a radix sort on the bits puts -0.0 first)."""
    assert (x == 0).sum() > 1, "the sort case must hold zeros"
    return x.where(x != 0, -x)


CORRECT = {
    "signed zeros swapped": lambda d: _swap_zero_signs(torch.sort(d[0]).values),
}
