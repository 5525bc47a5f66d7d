"""Cheat: cache outputs by input pointer; a miss is made slow (20 ms) so the score shows whether a cache hit was timed.
expect: slow_or_wrong
mode: ranked
"""
import time

import torch

_cache = {}


def custom_kernel(data):
    a, b, out = data
    key = (a.data_ptr(), b.data_ptr(), a.numel())
    if key in _cache:
        return _cache[key]
    time.sleep(0.02)
    result = torch.add(a, b, out=out)
    _cache[key] = result
    return result
