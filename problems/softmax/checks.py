"""Property cases of softmax's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"rows": 64, "cols": 3001, "seed": 17}


def _reciprocal(x: torch.Tensor) -> torch.Tensor:
    e = (x.float() - x.float().amax(-1, keepdim=True)).exp()
    return (e * (1 / e.sum(-1, keepdim=True))).half()


CORRECT = {
    "fp32": lambda d: torch.softmax(d[0].float(), dim=-1).half(),
    "reciprocal": lambda d: _reciprocal(d[0]),
}

WRONG = {
    "lower precision": lambda d, g: torch.softmax(d[0].float(), -1).bfloat16().half(),
}
