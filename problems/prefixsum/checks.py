"""Property cases of prefixsum's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"size": 200_003, "seed": 15}


def _scan_blocked(x: torch.Tensor, block: int) -> torch.Tensor:
    pad = -x.numel() % block
    blocks = torch.nn.functional.pad(x, (0, pad)).view(-1, block)
    inner = torch.cumsum(blocks, dim=1)
    carry = torch.cumsum(inner[:, -1], 0) - inner[:, -1]
    return (inner + carry[:, None]).flatten()[: x.numel()]


CORRECT = {
    "sequential": lambda d: torch.from_numpy(d[0].numpy().cumsum(dtype="float32")),  # one add after another
    "blocked 1024": lambda d: _scan_blocked(d[0], 1024),
    "blocked 4096": lambda d: _scan_blocked(d[0], 4096),
}

WRONG = {
    "off by one": lambda d, g: torch.cumsum(d[0], 0) - d[0],  # exclusive scan
    "lower precision": lambda d, g: torch.cumsum(d[0].half(), 0).float(),
}
