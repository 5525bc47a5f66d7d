"""Attack (red team, 2026-11-24): describe the output as a tuple of six references to one 3 GiB span of the sparse
host output arena, never written. The evaluator copied every reference (and timed a copy of that size with two more
buffers of it): its memory limit stopped it, an infrastructure error. Now the bytes an output names are counted
before anything is copied: at most what an arena holds, and 4 GiB of host memory in all.
expect: wrong_answer
mode: test
words: return each output once
"""
import torch

from runners.ipc.protocol import Seq, TensorRef
from runners.submission import serve


def _describe(self, out, depth=0):
    ref = TensorRef(arena=self.host_out.name, offset=0, dtype="uint8", shape=[3 << 30], stride=[1])
    return Seq(t="tuple", items=[ref] * 6)


serve.SubmissionProcess.describe = _describe


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
