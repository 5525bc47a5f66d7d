"""Cheat: find the socket to the evaluator and send it forged messages (an unasked-for reading of 1 ns, then
junk). Every message is validated against what is due: the run is rejected.
expect: rejected
mode: benchmark
words: protocol
"""
import os
import socket

import torch

from runners.ipc.protocol import Times


def _sockets():
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                yield int(fd)
        except OSError:
            pass


_sent = [False]


def custom_kernel(data):
    a, b, out = data
    torch.add(a, b, out=out)
    if not _sent[0]:
        _sent[0] = True
        for fd in _sockets():
            s = socket.socket(fileno=os.dup(fd))
            try:
                s.send(Times(k=10**6, r_ns=1.0).model_dump_json().encode())
                s.send(b"\x00junk{")
            except OSError:
                pass
            s.detach()
    return out
