"""Attack (CPU): answer "done" before the work is done, and finish the output while the evaluator is still copying it.

The evaluator closes the window when "done" arrives, then snapshots the output by cloning the whole span its strides
cover (window.snapshot: raw.clone() of the span), sequentially, outside the window. So: lay the output out with a
large stride in the host output arena (the values are right: the check reads them through the strides, as
inflate_allowance.py does), write the first chunk, answer "done" at once (reading: 1 ns), and let a thread write the
remaining chunks in order, always ahead of the evaluator's copy, which must read `stride` bytes per element. Each
call also does 20 ms of real work (sleeps between chunks, standing in for a slow kernel), all of it after "done".
The allowance follows the output's own bytes now, so it stays small; the span is what is abused here.
Measured on the 2-core CPU box: accepted, medians 5.8 ms and 1.1 ms against an honest 20.5 ms and 26.9 ms.
expect: slow_or_wrong
floor_ms: 20
mode: ranked
"""
import threading
import time

import torch

from runners.ipc.arena import Arena, materialize
from runners.ipc.protocol import Done, Go, Prepared, TensorRef
from runners.ipc.wire import PeerGone
from runners.submission import serve

SPAN = 1 << 30         # bytes the output is spread over
CHUNKS = 16
WORK_S = 0.020          # real work per call, all of it done after "done"
_orig = serve.SubmissionProcess.call_cpu

def _call_cpu(self, msg):
    if len(msg.data) != 1:
        return _orig(self, msg)
    self.wire.send(Prepared(k=msg.k))
    got = self.wire.recv()
    if got is None or not isinstance(got[0], Go) or got[0].k != msg.k:
        raise PeerGone
    go, fds = got
    if go.arena is not None:  # the call's inputs, in memory of their own, come with "go" (issue 37)
        self.arenas[go.arena.name] = Arena.open(self.torch, go.arena.name, "host", go.arena.size, fds[0])
    (a, b, out), = [materialize(self.torch, d, self.arenas) for d in msg.data]
    n = a.numel()
    if n < 1024:
        return Done(k=msg.k, outputs=[self.describe(self.fn((a, b, out)))], r_ns=1.0)
    stride = max(SPAN // (n * 4), 1)
    span = ((n - 1) * stride + 1) * 4
    ref = TensorRef(arena=self.host_out.name, offset=self.host_out.take(span), dtype="float32", shape=[n],
                    stride=[stride])
    view = self.host_out.view(self.torch, ref)
    step = -(-n // CHUNKS)
    torch.add(a[:step], b[:step], out=view[:step])       # the first chunk, before "done"

    def rest():
        for j in range(1, CHUNKS):
            time.sleep(WORK_S / CHUNKS)
            s = slice(j * step, min((j + 1) * step, n))
            torch.add(a[s], b[s], out=view[s])
    threading.Thread(target=rest, daemon=True).start()
    return Done(k=msg.k, outputs=[ref], r_ns=1.0)

serve.SubmissionProcess.call_cpu = _call_cpu

def custom_kernel(data):
    a, b, out = data
    time.sleep(WORK_S)
    return torch.add(a, b, out=out)
