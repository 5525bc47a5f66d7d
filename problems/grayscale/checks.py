"""Property cases of grayscale's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"height": 97, "width": 131, "seed": 13}

CORRECT = {
    "reversed order": lambda d: 0.1140 * d[0][..., 2] + 0.5870 * d[0][..., 1] + 0.2989 * d[0][..., 0],
    "matrix-vector": lambda d: d[0] @ torch.tensor([0.2989, 0.5870, 0.1140]),
}
