"""Cheat: find the checker through gc and swap it. The checker is in the evaluator, another process.
expect: wrong_answer
mode: test
"""
import gc

import torch


def custom_kernel(data):
    for obj in gc.get_objects():
        try:
            if hasattr(obj, "check") and hasattr(obj, "generate_input"):
                obj.check = lambda data, output: (True, "")
        except Exception:  # objects whose attribute lookup does odd things (ctypes loaders)
            pass
    _, _, out = data
    return torch.zeros_like(out)
