"""Cheat (CPU, several ranks; project issue 37, class 1): each rank watches the evaluator copy its shard of a call's
inputs into shared memory before "go" (a sentinel in the shard's last element, planted before "prepared"), as the
attack that passed shards between ranks through /dev/shm and summed them before the window (0.45x on allreduce's
256 MiB case) began. It prints FOUND when a shard's bytes arrived before "go", then does the call honestly (gloo).
Run by tests/runners/test_window.py; the defence is the one-rank one: the shard comes with "go", in a fresh memfd.
"""

import contextlib

import torch
import torch.distributed as dist

from runners.ipc.arena import materialize
from runners.ipc.protocol import Prepared
from runners.ipc.wire import Wire
from runners.submission import serve

_SENTINEL = -12288.0  # exact in bf16, and never a value of randn
_honest = serve.SubmissionProcess.call_cpu
_drop_prepared = []


def _call_cpu(self, msg):
    shards = None
    with contextlib.suppress(Exception):
        shards = [materialize(self.torch, d, self.arenas)[0] for d in msg.data]
    if shards is None:
        return _honest(self, msg)
    for x in shards:
        x[-1] = _SENTINEL
    self.wire.send(Prepared(k=msg.k))
    _drop_prepared.append(True)
    while not self.wire.waiting():
        if all(x[-1].item() != _SENTINEL for x in shards):
            if msg.timed:
                print("FOUND rank", dist.get_rank(), "read its shard before go", flush=True)
            break
    return _honest(self, msg)


_send = Wire.send


def _send_filtered(self, message, fds=None):
    if isinstance(message, Prepared) and _drop_prepared:
        _drop_prepared.clear()  # answered already, before watching
        return
    _send(self, message, fds)


Wire.send = _send_filtered
serve.SubmissionProcess.call_cpu = _call_cpu

if not dist.is_initialized():
    dist.init_process_group("gloo")
    dist.all_reduce(torch.ones(1024, dtype=torch.bfloat16))


def custom_kernel(data):
    (x,) = data
    dist.all_reduce(x)
    return x
