"""Cheat: a low-level thread (_thread: invisible to threading.enumerate) that writes the output after custom_kernel
has returned NaN at once. The evaluator copies the output where the call's window closes: too late.
expect: wrong_answer
mode: ranked
"""
import _thread
import time

import torch


def _late(a, b, out):
    time.sleep(0.005)
    torch.add(a, b, out=out)


def custom_kernel(data):
    a, b, out = data
    _thread.start_new_thread(_late, (a, b, out))
    return out
