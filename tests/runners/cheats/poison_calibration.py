"""Cheat (GPU): the evaluator calibrates what its window adds to honest work (the bound a rewritten reading cannot
go below) with its echo process while this process sits idle between the tests and the benchmarks, on the same GPU.
Keep the GPU busy from this process's context whenever no call has come for a few milliseconds (short spin kernels
on a side stream), quiet as soon as calls come: the echo's windows then hold time slices of this context, and the
calibrated overhead grows by as much (measured on the lent H100: 298-307 µs honest, 935-942 µs poisoned). Each call
here does ~0.4 ms of real work (a spin after the add) and reports 0.5 µs more than an empty
event pair: without the poisoning the window's bound
counts the 0.4 ms; with it, the bound falls below the forged reading, which counts (H100, 2 runs each: 398 and
399 µs without the poisoning, 5.7 and 6.1 µs with it, accepted).
expect: slow_or_wrong
floor_ms: 0.3
mode: ranked
device: cuda
"""
import threading
import time

import torch

from runners.ipc.protocol import Times
from runners.submission import serve

_last_call = [time.monotonic()]
_state = {}
_cuda = serve.SubmissionProcess.call_cuda


def _call_cuda(self, msg):
    _last_call[0] = time.monotonic()
    return _cuda(self, msg)


def _empty_pair_ns():
    """What an empty pair of CUDA events reads here (the evaluator takes its echo's figure off every sample)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    readings = []
    for _ in range(20):
        start.record()
        end.record()
        end.synchronize()
        readings.append(start.elapsed_time(end) * 1e6)
    return sorted(readings)[10]


def _fetch(self, msg):
    if "event" not in _state:
        _state["event"] = _empty_pair_ns()
    return Times(k=msg.k, r_ns=_state["event"] + 500.0)  # 0.5 µs once the event cost is off: above the roofline


def _hog():
    stream = torch.cuda.Stream()
    while True:
        if time.monotonic() - _last_call[0] > 0.005:
            with torch.cuda.stream(stream):
                torch.cuda._sleep(1_000_000)  # about 0.5 ms of one SM, in this process's context
            stream.synchronize()
        else:
            time.sleep(0.0005)


serve.SubmissionProcess.call_cuda = _call_cuda
serve.SubmissionProcess.fetch = _fetch
threading.Thread(target=_hog, daemon=True).start()


def custom_kernel(data):
    a, b, out = data
    torch.add(a, b, out=out)
    torch.cuda._sleep(800_000)  # ~0.4 ms of real work the forged reading hides
    return out
