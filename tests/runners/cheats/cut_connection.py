"""Cheat: shut down the connection to the evaluator in the middle of the tests and keep running, hoping the run ends
without a verdict against it (the runner waits a few seconds for the process to end, then stops it).
expect: runtime_error
mode: test
words: cut its connection
"""

import os
import socket
import time

import torch


def custom_kernel(data):
    a, b, out = data
    if out.numel() > 5:
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                    socket.socket(fileno=int(fd)).shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        time.sleep(600)
    return torch.add(a, b, out=out)
