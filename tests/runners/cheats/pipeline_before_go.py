"""Cheat (CPU; project issue 37, class 1): compute the answer while the evaluator copies the call's fresh inputs into
shared memory, before "go", and write it straight into the host output arena. The inputs are copied in order (a, b,
then out), so once the last element of ``out`` changes, ``a`` and ``b`` are final. On "call" this process plants a
sentinel in that element, answers "prepared", watches for the sentinel to go, adds ``a + b`` into the output arena,
and answers "go" at once with a reading of 1 ns: the window then holds a socket round trip and none of the work.
Against main before the fix it printed FOUND on every timed call (ranked on ``cpu`` with real problems such a
submission scored 1/56 of honest time). Defence: each call's inputs are written into a fresh memfd that the
submission process is handed only with "go" (``CpuWindow``): nothing it maps changes before "go", "go" comes first,
and the cheat then does its call honestly.
expect: inputs_hidden
mode: ranked
"""

import contextlib

import torch

from runners.ipc.arena import materialize
from runners.ipc.protocol import Done, Go, Prepared, TensorRef
from runners.ipc.wire import Wire
from runners.submission import serve

_SKIP = object()
_SENTINEL = 12345.0
_honest = serve.SubmissionProcess.call_cpu
_drop_prepared = []


def _views(self, msg):
    """The call's inputs, where the references point in what this process has mapped now (before the fix: the
    long-lived input arena the evaluator was about to copy them into)."""
    with contextlib.suppress(Exception):
        views = [materialize(self.torch, d, self.arenas) for d in msg.data]
        if all(isinstance(v, tuple) and len(v) == 3 for v in views):
            return views
    return None


def _call_cpu(self, msg):
    views = _views(self, msg)
    if views is None:
        return _honest(self, msg)
    for _, _, out in views:
        out[-1] = _SENTINEL
    self.wire.send(Prepared(k=msg.k))
    seen = True
    for _, _, out in views:
        while out[-1].item() == _SENTINEL:  # the evaluator's copy has not reached the end of `out` yet
            if self.wire.waiting():  # "go" came first: there was nothing to watch
                seen = False
                break
        if not seen:
            break
    if not seen:  # an honest call (serve's own, which would answer "prepared" again: it was answered)
        _drop_prepared.append(True)
        return _honest(self, msg)
    refs = []
    for a, b, _ in views:
        ref = TensorRef(
            arena=self.host_out.name,
            offset=self.host_out.take(a.numel() * 4),
            dtype="float32",
            shape=[a.numel()],
            stride=[1],
        )
        torch.add(a, b, out=self.host_out.view(self.torch, ref))  # the work, before "go"
        refs.append(ref)
    got = self.wire.recv()
    if got is None or not isinstance(got[0], Go):
        raise serve.PeerGone
    if msg.timed:
        print("FOUND the inputs before go", flush=True)
    self.wire.send(Done(k=msg.k, outputs=refs, r_ns=1.0))
    return _SKIP


_send = Wire.send


def _send_filtered(self, message, fds=None):
    if message is _SKIP:  # serve() sends what call_cpu returns: the answer went out already
        return
    if isinstance(message, Prepared) and _drop_prepared:
        _drop_prepared.clear()
        return
    _send(self, message, fds)


Wire.send = _send_filtered
serve.SubmissionProcess.call_cpu = _call_cpu


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
