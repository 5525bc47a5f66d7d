"""Cheat: in benchmark mode only the first timed call of each case is checked (the inputs are the same every call),
so answer right until that call has been made, then return the untouched output buffer (NaN) at once. The
submission process sees which calls are timed (``Call.timed``) and which case it is in (the size). A harness that
times a call must check what it timed, or at least check calls the submission cannot tell apart.
expect: wrong_answer
mode: benchmark
"""
import torch

from runners.submission import serve

_timed_seen: dict[int, int] = {}
_state = {"timed": False}
_call_cpu = serve.SubmissionProcess.call_cpu


def _spy(self, msg):
    _state["timed"] = msg.timed
    return _call_cpu(self, msg)


serve.SubmissionProcess.call_cpu = _spy


def custom_kernel(data):
    a, b, out = data
    if _state["timed"]:
        seen = _timed_seen[a.numel()] = _timed_seen.get(a.numel(), 0) + 1
        if seen > 1:
            return out  # nothing computed: the NaN buffer generate_input made
    return torch.add(a, b, out=out)
