"""Cheat: make the reference's check always agree, then return garbage. The check runs in the evaluator.
expect: wrong_answer
mode: test
words: elements differ
"""
import sys

import torch


def custom_kernel(data):
    for name in ("reference", "__main__"):  # the reference is not in this process at all
        module = sys.modules.get(name)
        if module is not None:
            module.check_implementation = lambda data, output: (True, "")
    a, _, out = data
    return torch.zeros_like(out)
