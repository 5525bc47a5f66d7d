"""Cheat (CPU; project issue 37, class 2): the CPU window allowed for the submission process's copy of its output
into the host output arena (the fastest this machine copies that many bytes), a copy it never saw. So write the
answer straight into the output arena, make no copy, and report a reading of 1 ns: the allowance came off the window
all the same, and the platform's own paired compare put this at 0.40x the time of the same kernel.
Defence: no allowance (``CpuWindow``: everything in the window is the submission's), and an honest output that
already lies in shared memory (the ``out`` it was given) is not copied either, so this saves nothing over honest
work. test_window.py::test_the_cpu_window_allows_nothing_for_a_copy_it_did_not_see holds the window to it exactly.
expect: no_gain
mode: ranked
"""
import gc

import torch

from runners.ipc.protocol import Done, TensorRef
from runners.submission import serve

_cpu, _tensor_ref = serve.SubmissionProcess.call_cpu, serve.SubmissionProcess._tensor_ref
_process = []


def _call_cpu(self, msg):
    done = _cpu(self, msg)
    return Done(k=done.k, outputs=done.outputs, error=done.error, r_ns=1.0)


def _in_place(self, t):
    """An output already in the output arena is named where it lies: no copy (before the fix serve copied it)."""
    at = self.host_out.contains(t.data_ptr(), t.numel() * t.element_size()) if self.host_out is not None else None
    if at is None or t.is_cuda:
        return _tensor_ref(self, t)
    return TensorRef(arena=self.host_out.name, offset=at, dtype="float32", shape=list(t.shape), stride=[1])


serve.SubmissionProcess.call_cpu = _call_cpu
serve.SubmissionProcess._tensor_ref = _in_place


def custom_kernel(data):
    a, b, _ = data
    if not _process:
        _process.extend(o for o in gc.get_objects() if isinstance(o, serve.SubmissionProcess))
    host_out = _process[0].host_out
    view = torch.frombuffer(host_out.owner, dtype=torch.float32, count=a.numel(), offset=host_out.take(a.numel() * 4))
    return torch.add(a, b, out=view)  # in the output arena already: described where it lies, never copied
