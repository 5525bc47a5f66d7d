"""Cheat: ignore the inputs and return the answer for the public seed of each size (regenerated with the reference).
expect: wrong_answer
mode: ranked
words: timed call
"""
import sys

import torch

PUBLIC_SEEDS = {1: 1, 7: 2, 1000: 3, 4096: 10, 65536: 11}
_answers = {}


def custom_kernel(data):
    _, _, out = data
    n = out.numel()
    if n not in _answers:
        a, b, _ = sys.modules["reference"].generate_input(size=n, seed=PUBLIC_SEEDS[n])
        _answers[n] = a + b
    out.copy_(_answers[n])
    return out
