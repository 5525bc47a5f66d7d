"""Cheat: answer with a forged output location, far outside the shared memory, or inside it but in the evaluator's
way; every reference is checked against the arena's bounds.
expect: wrong_answer
mode: test
words: could not be read
"""
import torch

from runners.ipc.protocol import TensorRef
from runners.submission import serve

_describe = serve.SubmissionProcess.describe


def _forged(self, out, depth=0):
    ref = _describe(self, out, depth)
    if isinstance(ref, TensorRef):
        return TensorRef(arena=ref.arena, offset=1 << 60, dtype=ref.dtype, shape=ref.shape, stride=ref.stride)
    return ref


serve.SubmissionProcess.describe = _forged


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
