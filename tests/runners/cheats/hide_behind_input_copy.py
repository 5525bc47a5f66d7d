"""Cheat (GPU, red team 5): do the work on this call's inputs before "go", while the evaluator's stream is still
between its input copy and t0. window.py's claim is that the evaluator's copies, L2 flush, t0 and "go" run
"uninterrupted": but a plain d2d copy_ runs on a copy engine, and the GPU schedules its engines separately, so
this context may hold the compute engine while the evaluator's copy lands; once this context's kernel is running,
the evaluator's flush (and so t0) waits for it to finish or for its time slice to end.

Per call (in the process's own call_cuda, before it answers "enqueued"): write 0 into the last word of ``out``
(synchronously, so before the evaluator's copy of this call's inputs, which comes after the answer); on a side
stream that does not wait for "go": wait until that word is non-zero (cuStreamWaitValue32 AND: the evaluator's
copy writes NaN there, after a and b are complete), then ~0.4 ms of "work" (a spin) and a + b into a scratch
buffer. custom_kernel (behind "go") waits for that side stream and copies scratch into out: its own reading is
one small copy. On the main stream, after "go", it also writes 1 into the watched word, so the side stream never
waits for ever (a race with a degraded call only moves the work into the window).

If the side work lands inside the window, every sample is >= ~0.4 ms (the window's bound counts it); if it ran
before t0, the samples are a few us. Diagnostics (how many calls' side work finished before the call's own start
event) go to stderr.
expect: slow_or_wrong
floor_ms: 0.3
mode: ranked
device: cuda
"""
import ctypes
import sys

import torch

from runners.ipc.arena import materialize
from runners.submission import serve

SPIN_CYCLES = 800_000  # ~0.4 ms on an H100 (poison_calibration.py measured the same)
_WAIT_AND = 0x2  # CU_STREAM_WAIT_VALUE_AND: wait until (*addr & value) != 0
_cuda, _fetch = serve.SubmissionProcess.call_cuda, serve.SubmissionProcess.fetch
_st = {"helper": None, "side": None, "pending": {}, "events": {}, "before": 0, "calls": 0}


def _streams():
    if _st["side"] is None:
        _st["helper"], _st["side"] = torch.cuda.Stream(), torch.cuda.Stream()
    return _st["helper"], _st["side"]


def _call_cuda(self, msg):
    helper, side = _streams()
    _st["driver"] = self.driver
    events, keep = [], []
    for value in msg.data:
        a, b, out = materialize(torch, value, self.arenas)
        word = out.view(torch.int32)[-1:]
        with torch.cuda.stream(helper):
            word.zero_()
        helper.synchronize()  # written before we answer, so before the evaluator copies this call's inputs
        scratch = torch.empty_like(out)
        self.driver._call("cuStreamWaitValue32_v2", ctypes.c_void_p(side.cuda_stream),
                          ctypes.c_ulonglong(word.data_ptr()), ctypes.c_uint32(0xFFFFFFFF), ctypes.c_uint(_WAIT_AND))
        with torch.cuda.stream(side):
            torch.cuda._sleep(SPIN_CYCLES)
            torch.add(a, b, out=scratch)
        done = torch.cuda.Event(enable_timing=True)
        done.record(side)
        keep.append(scratch)  # alive until the next call (its side and main work are over by then)
        _st["pending"][out.data_ptr()] = (scratch, done, word.data_ptr())
        events.append(done)
    _st["events"], _st["keep"] = {msg.k: events}, keep
    return _cuda(self, msg)


def _fetch_and_count(self, msg):
    got = _fetch(self, msg)
    start = self.events.get(msg.k, (None, None))[0]
    side_done = _st["events"].get(msg.k, [])
    if start is not None and side_done:
        _st["calls"] += 1
        if side_done[-1].elapsed_time(start) > 0:  # the side work ended before the call's own start (after "go")
            _st["before"] += 1
        if _st["calls"] % 10 == 0:
            print(f"side work done before the call started: {_st['before']} of {_st['calls']} timed calls",
                  file=sys.stderr, flush=True)
    return got


def _warm_up():
    """Load every kernel's module now, while no stream of this process waits on anything: a module loaded lazily
    at a kernel's first launch waits for the whole context (docs/measurement.md), here a side stream's wait."""
    if not torch.cuda.is_available():
        return
    x = torch.ones(16, device="cuda")
    y = torch.empty_like(x)
    torch.add(x, x, out=y)
    y.view(torch.int32)[-1:].zero_()
    y.copy_(x)
    torch.cuda._sleep(1)
    torch.cuda.synchronize()


_warm_up()


serve.SubmissionProcess.call_cuda = _call_cuda
serve.SubmissionProcess.fetch = _fetch_and_count


def custom_kernel(data):
    a, b, out = data
    pending = _st["pending"].pop(out.data_ptr(), None)
    if pending is None:  # (the CPU, or a call that did not come through call_cuda)
        return torch.add(a, b, out=out)
    scratch, done, word = pending
    _st["driver"].write_value(torch.cuda.current_stream().cuda_stream, word, 1)  # after "go": unblock a stuck wait
    torch.cuda.current_stream().wait_event(done)
    out.copy_(scratch)
    return out

