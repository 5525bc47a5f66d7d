"""Cheat: rewrite this process's own readings of every call to 1 ns, at the place they are reported (the
submission process's code, which is the submission's to change). The evaluator's clock bounds them.
expect: no_gain
mode: ranked
"""
import torch

from runners.ipc.protocol import Done, Times
from runners.submission import serve

_cpu, _fetch = serve.SubmissionProcess.call_cpu, serve.SubmissionProcess.fetch


def _call_cpu(self, msg):
    done = _cpu(self, msg)
    return Done(k=done.k, outputs=done.outputs, error=done.error, r_ns=1.0)


serve.SubmissionProcess.call_cpu = _call_cpu
serve.SubmissionProcess.fetch = lambda self, msg: Times(k=msg.k, r_ns=1.0)


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
