"""Cheat (CPU): the evaluator takes the time it spends copying the output out of shared memory off the window
(``allowance = 1.5 x copy``), and copies the whole span the output's strides cover. So spread the output over 2 GiB
of the host output arena (the values are right: the check reads them through the strides): the evaluator's copy then
takes most of a second, its allowance exceeds the window, ``timing.cap_overhead`` lowers the overhead to that negative
difference, and a case that ends after a single sample (its time budget is spent on these copies) scores the reading
this process reports, rewritten to 1 ns (as forge_readings.py does). Measured here: a median of 1 ns for the
65536-element case against an honest 36 ms; with more samples the negative cap raises the others instead.
expect: no_gain
mode: ranked
"""
import torch

from runners.ipc.protocol import Done, TensorRef
from runners.submission import serve

SPAN_BYTES = 2 << 30
_cpu, _tensor_ref = serve.SubmissionProcess.call_cpu, serve.SubmissionProcess._tensor_ref


def _spread_ref(self, t):
    t = t.detach()
    if t.is_cuda or t.dim() != 1 or self.host_out is None:
        return _tensor_ref(self, t)
    stride = max(SPAN_BYTES // (t.numel() * t.element_size()), 1)
    span = ((t.numel() - 1) * stride + 1) * t.element_size()
    ref = TensorRef(arena=self.host_out.name, offset=self.host_out.take(span), dtype=str(t.dtype).removeprefix(
        "torch."), shape=[t.numel()], stride=[stride])
    self.host_out.view(self.torch, ref).copy_(t)
    return ref


def _call_cpu(self, msg):
    done = _cpu(self, msg)
    return Done(k=done.k, outputs=done.outputs, error=done.error, r_ns=1.0)


serve.SubmissionProcess._tensor_ref = _spread_ref
serve.SubmissionProcess.call_cpu = _call_cpu


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
