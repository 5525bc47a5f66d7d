"""Attack: an output nested 20 tuples deep around the right tensor. The evaluator's snapshot and the problem's check
walk an output recursively, and nesting past Python's recursion limit would fail inside trusted code (a RecursionError
in the problem's check reads as the problem's fault). The evaluator refuses an output nested deeper than an honest
one can be (8, as the submission process's own describe allows), so no depth reaches that limit.
expect: wrong_answer
mode: test
words: nests
"""
import torch

from runners.ipc.protocol import Seq
from runners.submission import serve

_orig = serve.SubmissionProcess.describe


def _describe(self, out, depth=0):
    value = _orig(self, out)
    for _ in range(20):
        value = Seq(t="tuple", items=[value])
    return value


serve.SubmissionProcess.describe = _describe


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
