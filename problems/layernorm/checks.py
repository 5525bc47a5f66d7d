"""Property cases of layernorm's check, run by tests/problems/test_problem_checks.py (docs/authoring.md, section 6)."""

import torch

CASE = {"rows": 64, "cols": 2049, "dtype": "bfloat16", "seed": 21}


def _layernorm(
    x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, mean: torch.Tensor, var: torch.Tensor
) -> torch.Tensor:
    return ((x.float() - mean) * torch.rsqrt(var + 1e-5) * w.float() + b.float()).to(x.dtype)


def _sequential(d: tuple) -> torch.Tensor:
    """Mean and variance summed one column after another in fp32 (one thread per row)."""
    x = d[0].float()
    total = torch.zeros(x.shape[0], 1)
    for j in range(x.shape[1]):
        total += x[:, j : j + 1]
    mean = total / x.shape[1]
    squares = torch.zeros_like(total)
    for j in range(x.shape[1]):
        squares += (x[:, j : j + 1] - mean).square()
    return _layernorm(d[0], d[1], d[2], mean, squares / x.shape[1])


def _welford(d: tuple, chunk: int = 256) -> torch.Tensor:
    """Welford's mean and variance per chunk of columns in fp32, merged chunk by chunk (Chan et al.)."""
    x = d[0].float()
    count, mean, m2 = 0, torch.zeros(x.shape[0], 1), torch.zeros(x.shape[0], 1)
    for part in x.split(chunk, dim=1):
        n_b = part.shape[1]
        mean_b = part.mean(dim=1, keepdim=True)
        m2_b = (part - mean_b).square().sum(dim=1, keepdim=True)
        delta = mean_b - mean
        total = count + n_b
        mean = mean + delta * (n_b / total)
        m2 = m2 + m2_b + delta.square() * (count * n_b / total)
        count = total
    return _layernorm(d[0], d[1], d[2], mean, m2 / count)


def _one_pass(d: tuple) -> torch.Tensor:
    x = d[0].float()
    mean = x.mean(dim=-1, keepdim=True)
    return _layernorm(d[0], d[1], d[2], mean, (x.square().mean(dim=-1, keepdim=True) - mean.square()).clamp(min=0))


def _eps_outside(d: tuple) -> torch.Tensor:
    x = d[0].float()
    centred = x - x.mean(-1, keepdim=True)
    return (centred / (centred.square().mean(-1, keepdim=True).sqrt() + 1e-5) * d[1].float() + d[2].float()).to(
        d[0].dtype
    )


CORRECT = {
    "fp32 layer_norm": lambda d: torch.nn.functional.layer_norm(
        d[0].float(), (d[0].shape[-1],), d[1].float(), d[2].float(), 1e-5).to(d[0].dtype),
    "sequential fp32 sums": _sequential,
    "Welford over chunks": _welford,
}

WRONG = {
    "one-pass variance": lambda d, g: _one_pass(d),
    "unbiased variance": lambda d, g: _layernorm(d[0], d[1], d[2], d[0].float().mean(-1, keepdim=True),
                                                 d[0].float().var(-1, keepdim=True)),
    "eps outside": lambda d, g: _eps_outside(d),
    "no bias": lambda d, g: _layernorm(d[0], d[1], torch.zeros_like(d[2]), d[0].float().mean(-1, keepdim=True),
                                       d[0].float().var(-1, keepdim=True, correction=0)),
    "lower precision": lambda d, g: torch.nn.functional.layer_norm(
        d[0].float(), (d[0].shape[-1],), d[1].float(), d[2].float(), 1e-5).to(torch.float8_e4m3fn).to(d[0].dtype),
}
