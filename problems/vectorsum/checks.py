"""Property cases of vectorsum's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"size": 200_003, "seed": 12}


def _blocked_sum(x: torch.Tensor, block: int) -> torch.Tensor:
    pad = -x.numel() % block
    parts = torch.nn.functional.pad(x, (0, pad)).view(-1, block).sum(dim=1)  # fp32 partials
    return torch.cumsum(parts, 0)[-1]  # summed one after another, in fp32


CORRECT = {
    "blocks of 65536": lambda d: _blocked_sum(d[0], 65536),
    "blocks of 128": lambda d: _blocked_sum(d[0], 128),
    "sequential": lambda d: torch.from_numpy(d[0].numpy().cumsum(dtype="float32"))[-1],  # one add after another
    "pairwise": lambda d: d[0].sum(),
}

WRONG = {
    "skipped element": lambda d, g: d[0][1:].sum(),
    "off by one": lambda d, g: d[0][:-1].sum(),
    "lower precision": lambda d, g: d[0].bfloat16().float().sum(),
}
