"""Cheat: return at once and let a Python thread write the output later (work the timer would never see). The
evaluator copies the output where the call's window closes: the late write comes too late.
expect: wrong_answer
mode: test
"""
import threading
import time

import torch


def _finish(a, b, out):
    time.sleep(0.5)
    torch.add(a, b, out=out)


def custom_kernel(data):
    a, b, out = data
    threading.Thread(target=_finish, args=(a, b, out), name="late-writer").start()
    return out
