"""Cheat (GPU, red team 5): hide_behind_input_copy.py with the compute engine already held when the evaluator's
input copy lands. A Triton kernel launched at "enqueued" time on a side stream (not behind "go") spins on two
the words: the last word of ``out``, which this process zeroed just before answering and which the evaluator's copy of
this call's inputs overwrites with NaN (after a and b are complete), and the "go" word itself (so it never spins
for ever). The same side stream then does ~0.4 ms of "work" (a spin) and a + b into a scratch buffer;
custom_kernel (behind "go") only waits for it and copies scratch into out.

The evaluator's copy is a copy-engine memcpy; this context holds the compute engine (the spinning kernel) while it
runs, so the evaluator's L2 flush, t0 and "go" wait for this context's time slice to end (or its work to finish):
work on this call's inputs done before the window opens. If the GPU instead holds the window shut until the side
work is done, every sample is >= ~0.4 ms. Diagnostics as in hide_behind_input_copy.py (stderr).
expect: slow_or_wrong
floor_ms: 0.3
mode: ranked
device: cuda
"""
import sys

import torch
import triton
import triton.language as tl

from runners.ipc.arena import materialize
from runners.submission import serve

SPIN_CYCLES = 800_000  # ~0.4 ms on an H100
_cuda, _fetch = serve.SubmissionProcess.call_cuda, serve.SubmissionProcess.fetch
_st = {"helper": None, "side": None, "pending": {}, "events": {}, "keep": [], "before": 0, "calls": 0}


@triton.jit(do_not_specialize=["k"])
def _watch(word_ptr, go_ptr, k):
    """Return once the word is non-zero (the evaluator's copy landed) or "go" has reached k."""
    w = tl.load(word_ptr, volatile=True)
    g = tl.load(go_ptr, volatile=True)
    while (w == 0) & (g < k):
        w = tl.load(word_ptr, volatile=True)
        g = tl.load(go_ptr, volatile=True)


def _call_cuda(self, msg):
    if _st["side"] is None:
        from runners.ipc.cuda import byte_tensor

        _st["helper"], _st["side"] = torch.cuda.Stream(), torch.cuda.Stream()
        _st["go"] = byte_tensor(torch, self.ctrl.base + serve.GO_OFFSET, 4).view(torch.int32)
    helper, side = _st["helper"], _st["side"]
    events, keep = [], []
    for value in msg.data:
        a, b, out = materialize(torch, value, self.arenas)
        word = out.view(torch.int32)[-1:]
        with torch.cuda.stream(helper):
            word.zero_()
        helper.synchronize()  # before we answer, so before the evaluator copies this call's inputs
        scratch = torch.empty_like(out)
        with torch.cuda.stream(side):
            _watch[(1,)](word, _st["go"], msg.k)
            torch.cuda._sleep(SPIN_CYCLES)
            torch.add(a, b, out=scratch)
        done = torch.cuda.Event(enable_timing=True)
        done.record(side)
        keep.append(scratch)
        _st["pending"][out.data_ptr()] = (scratch, done)
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
    go = torch.full((1,), 2, dtype=torch.int32, device="cuda")
    _watch[(1,)](y.view(torch.int32)[-1:], go, 1)  # exits at once (go >= k): compiled and loaded
    torch.cuda.synchronize()


_warm_up()


serve.SubmissionProcess.call_cuda = _call_cuda
serve.SubmissionProcess.fetch = _fetch_and_count


def custom_kernel(data):
    a, b, out = data
    pending = _st["pending"].pop(out.data_ptr(), None)
    if pending is None:  # (the CPU, or a call that did not come through call_cuda)
        return torch.add(a, b, out=out)
    scratch, done = pending
    torch.cuda.current_stream().wait_event(done)
    out.copy_(scratch)
    return out
