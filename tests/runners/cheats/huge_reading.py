"""Cheat (red team 5, verdict laundering): report a huge but finite reading (1e200 ns) for every other timed call,
where this process reports its readings (CPU: with "done"; CUDA: the answer to "fetch"). The protocol accepts any
finite non-negative reading (``Times.r_ns``/``Done.r_ns``: ``ge=0, allow_inf_nan=False``), ``sample_of`` keeps
max(reading, bound), and the trusted entry's statistics (``runners/stats.py::timing_stats``: ``math.fsum`` and
``(x - mean) ** 2``) raise OverflowError on a mix of 1e200 and honest samples. The entry's ``_timed`` turns that into
"the runner failed: OverflowError" (an infrastructure error, retried, counted against the worker). An honest
platform scores the run as slow (or refuses the reading as the submission's), never as its own failure.
expect: no_gain
mode: benchmark
device: cpu cuda
"""
import torch

from runners.ipc.protocol import Done, Times
from runners.submission import serve

_cpu, _fetch = serve.SubmissionProcess.call_cpu, serve.SubmissionProcess.fetch
_n = [0]


def _huge(r_ns):
    _n[0] += 1
    return 1e200 if _n[0] % 2 else r_ns


def _call_cpu(self, msg):
    done = _cpu(self, msg)
    if done.error is not None or not msg.timed:
        return done
    return Done(k=done.k, outputs=done.outputs, error=done.error, r_ns=_huge(done.r_ns))


def _fetch_huge(self, msg):
    got = _fetch(self, msg)
    return Times(k=got.k, r_ns=_huge(got.r_ns))


serve.SubmissionProcess.call_cpu = _call_cpu
serve.SubmissionProcess.fetch = _fetch_huge


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
