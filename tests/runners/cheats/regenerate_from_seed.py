"""Cheat: ignore the inputs and return the answer for the public seed of each size (the generator copied from the
problem's published reference). Ranked timed calls get inputs from a secret the submission never sees.
expect: wrong_answer
mode: ranked
words: timed call
"""
import torch

PUBLIC_SEEDS = {1: 1, 7: 2, 1000: 3, 4096: 10, 65536: 11}
_answers = {}


def _public(size, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(size, generator=gen), torch.randn(size, generator=gen)


def custom_kernel(data):
    _, _, out = data
    n = out.numel()
    if n not in _answers:
        a, b = _public(n, PUBLIC_SEEDS[n])
        _answers[n] = a + b
    out.copy_(_answers[n])
    return out
