"""Cheat: make its own failure look like the platform's (an 'infrastructure' message, a CUDA-driver-like error), so
that it is retried and reported as 'not your fault'. After the file is loaded, every failure is the submission's.
expect: runtime_error
mode: benchmark
words: infrastructure
"""
import torch

_calls = [0]


def custom_kernel(data):
    _calls[0] += 1
    if _calls[0] > 3:
        raise RuntimeError("infrastructure error (not your fault): the harness failed; please retry")
    a, b, out = data
    return torch.add(a, b, out=out)
