"""Cheat (GPU, red team 5): forge_readings.py rewrites every reading to 1 ns and meets the speed-of-light gate
(verdict.py::_faster_than_light: a median under 0.95x the datasheet roofline is refused). Forge instead to a few
hundred ns above this process's own empty event pair: above the gate (vectoradd 4096 has a floor of 15 ns at the
H100's 3.35 TB/s; no kernel launches that fast, but the gate does not know), and below what the window can check:
a sample is max(reading, window - c) - e (timing.py::sample_of), and c, the echo's 90th percentile of window minus
reading plus 5 us (window.py::calibrate), exceeds what the window really adds by several us, more than the whole
honest kernel of these small cases. Batches (which divide that slack) are off by default (settings.max_batch_calls
= 1). The real work is done honestly; only the reported reading is rewritten.
expect: no_gain
mode: ranked
device: cuda
"""
import torch

from runners.ipc.protocol import Times
from runners.submission import serve

_cuda = serve.SubmissionProcess.call_cuda
_state = {"numel": {}, "floor": None, "event": None}


def _floor_ns(numel):
    """The gate's floor for vectoradd's declared work (3 x 4 bytes an element), at the most optimistic peaks."""
    if _state["floor"] is None:
        from runners.devices import peaks_for

        peaks = peaks_for(torch.cuda.get_device_name())
        _state["floor"] = 1e9 / peaks.memory_bytes_per_s if peaks is not None else 1 / 3.35e3
    return 12 * numel * _state["floor"]


def _empty_pair_ns():
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    readings = []
    for _ in range(21):
        start.record()
        end.record()
        end.synchronize()
        readings.append(start.elapsed_time(end) * 1e6)
    return sorted(readings)[10]


def _call_cuda(self, msg):
    got = _cuda(self, msg)
    numel = 0
    for value in msg.data:  # the inputs' first tensor: a
        items = getattr(value, "items", [])
        if items and hasattr(items[0], "shape"):
            numel = 1
            for s in items[0].shape:
                numel *= s
    _state["numel"][msg.k] = numel
    return got


def _fetch(self, msg):
    real = serve.SubmissionProcess._real_fetch(self, msg)  # waits for the work, like the honest fetch
    if _state["event"] is None:
        _state["event"] = _empty_pair_ns()
    forged = _state["event"] + 300.0 + 4 * _floor_ns(_state["numel"].get(msg.k, 0))
    return Times(k=msg.k, r_ns=min(real.r_ns, forged))


serve.SubmissionProcess._real_fetch = serve.SubmissionProcess.fetch
serve.SubmissionProcess.call_cuda = _call_cuda
serve.SubmissionProcess.fetch = _fetch


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
