"""Cheat: cache outputs by a hash of the inputs' content; a miss is made slow (20 ms).
expect: slow_or_wrong
mode: ranked
"""
import hashlib
import time

import torch

_cache = {}


def custom_kernel(data):
    a, b, out = data
    key = hashlib.sha1(a.cpu().numpy().tobytes() + b.cpu().numpy().tobytes()).hexdigest()
    if key in _cache:
        return out.copy_(_cache[key])
    time.sleep(0.02)
    result = torch.add(a, b, out=out)
    _cache[key] = result.clone()
    return result
