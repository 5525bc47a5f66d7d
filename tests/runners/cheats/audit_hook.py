"""Cheat: do the real work inside an audit hook that fires after custom_kernel has returned (when this process talks
to the evaluator), outside the call's own timing. The evaluator's window is still open until the answer arrives,
so the work is counted, or the output is incomplete.
expect: no_gain
mode: ranked
"""
import sys

import torch

_pending = []


def _hook(event, args):
    if _pending and event.startswith("socket."):
        a, b, out = _pending.pop()
        torch.add(a, b, out=out)


sys.addaudithook(_hook)


def custom_kernel(data):
    _pending.append(data)
    return data[2]
