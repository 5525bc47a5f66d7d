"""Property cases of histogram's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"size": 100_003, "contention": 30, "seed": 14}

CORRECT = {
    "bincount": lambda d: torch.bincount(d[0].long(), minlength=256).int(),
}

WRONG = {
    "lower precision": lambda d, g: g.long(),  # the wrong dtype
    "skipped element": lambda d, g: torch.bincount(d[0][:-1].long(), minlength=256).int(),
}
