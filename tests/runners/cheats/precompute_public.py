"""Cheat: the public half of a ranked submission used to draw its timed inputs from seeds anyone could compute
(public:<case seed>): precompute those answers at import and serve them. The public half now draws from a fresh
random secret each run, so every lookup misses (and a miss sleeps 20 ms).
expect: slow_or_wrong
mode: ranked
"""
import hashlib
import hmac
import time

import torch

_cache = {}
for seed, size in ((10, 4096), (11, 65536)):
    case = {10: 0, 11: 1}[seed]
    for call in range(64):
        derived = int.from_bytes(hmac.new(f"public:{seed}".encode(), f"{case}:{call}".encode(),
                                          hashlib.sha256).digest()[:6], "big")
        gen = torch.Generator().manual_seed(derived)
        a, b = torch.randn(size, generator=gen), torch.randn(size, generator=gen)
        _cache[(size, float(a[0]))] = a + b


def custom_kernel(data):
    a, b, out = data
    hit = _cache.get((a.numel(), float(a[0])))
    if hit is not None:
        return out.copy_(hit)
    time.sleep(0.02)
    return torch.add(a, b, out=out)
