"""Property cases of rmsnorm's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"rows": 64, "hidden": 2049, "seed": 18}

CORRECT = {
    "fp32": lambda d: torch.nn.functional.rms_norm(d[0].float(), (d[0].shape[-1],), d[1].float(), 1e-6).bfloat16(),
    "weight first": lambda d: (d[0].float() * (d[1].float() * torch.rsqrt(
        d[0].float().square().mean(-1, keepdim=True) + 1e-6))).bfloat16(),
}

WRONG = {
    "lower precision": lambda d, g: (d[0] * torch.rsqrt(d[0].square().mean(-1, keepdim=True) + 1e-6) * d[1]),
    "eps outside": lambda d, g: (d[0].float() / (d[0].float().square().mean(-1, keepdim=True).sqrt() + 1e-6)
                                 * d[1].float()).bfloat16(),
}
