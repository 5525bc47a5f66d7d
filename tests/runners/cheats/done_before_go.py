"""Cheat (CPU): every call "costs" 20 ms of host work (a sleep standing in for a slow kernel). The inputs of a call
are already in shared memory when "call" arrives, so do that work then, before answering "prepared", and send
"done" right behind it, before "go" was ever sent. The evaluator's window (from sending "go" to reading "done")
then spans only a socket round trip, and the 20 ms of every call fall outside every clock. An honest clock gives
every benchmark a median of at least 20 ms. Defence: the inputs reach shared memory only after "prepared" (work done
on "call" finds the last call's data; since issue 37 they come with "go" only, in memory of their own), and an answer
already waiting when "go" is due is refused. (Under load the evaluator may send "go" before the premature "done" has
arrived: then that answer, made on no inputs, is judged and fails: wrong answer, CI 2026-11-28.)
expect: rejected|wrong_answer
words: before it was started
mode: ranked
"""
import time

import torch

from runners.ipc.arena import materialize
from runners.ipc.protocol import Done, Prepared
from runners.ipc.wire import Wire
from runners.submission import serve

_SKIP = object()


def _call_cpu(self, msg):
    try:
        inputs = [materialize(self.torch, d, self.arenas) for d in msg.data]
    except Exception:  # (since issue 37 the inputs come with "go" only: answer on nothing, all the same)
        inputs = []
    outs = [self.fn(data) for data in inputs]  # the work, before anyone started a clock
    described = [self.describe(out) for out in outs]
    self.wire.send(Prepared(k=msg.k))
    self.wire.send(Done(k=msg.k, outputs=described, r_ns=1.0))  # queued before "go" exists
    self.wire.recv()  # the "go" that follows: nothing left to do
    return _SKIP


_send = Wire.send


def _send_unless_skip(self, message, fds=None):
    if message is not _SKIP:  # serve() sends what call_cpu returns: the answer went out already
        _send(self, message, fds)


Wire.send = _send_unless_skip
serve.SubmissionProcess.call_cpu = _call_cpu


def custom_kernel(data):
    a, b, out = data
    time.sleep(0.02)
    return torch.add(a, b, out=out)
