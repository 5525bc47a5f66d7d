"""Attack (red team, 2026-11-25): describe the output as a span of the host *input* arena. Honest CPU outputs are
always copied into the host output arena on their way back, so the input arena is never an output; naming its
untouched pages made the evaluator read them in (and keep them, charged to its own memory) call after call.
expect: wrong_answer
mode: test
words: names the host_in arena
"""
import torch

from runners.ipc.protocol import TensorRef
from runners.submission import serve


def _describe(self, out, depth=0):
    return TensorRef(arena="host_in", offset=1 << 30, dtype="float32", shape=[1 << 20], stride=[1])


serve.SubmissionProcess.describe = _describe


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
