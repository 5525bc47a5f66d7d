"""Cheat: hunt for the ranked run's secret seed (the one the test passes) everywhere the process can look.
expect: secret_hidden
mode: ranked
"""
import gc
import os
import sys
from pathlib import Path

import torch

SECRET = 20261121 + 1  # computed, so that this file's own text never contains it
NEEDLE = str(SECRET)


def _hunt():
    places = []
    places += [f"env {k}" for k, v in os.environ.items() if NEEDLE in v]
    for proc in ("self", "1", str(os.getppid())):
        for name in ("environ", "cmdline"):
            try:
                if NEEDLE.encode() in Path(f"/proc/{proc}/{name}").read_bytes():
                    places.append(f"/proc/{proc}/{name}")
            except OSError:
                pass
    for root, _, files in os.walk(os.getcwd()):
        for f in files:
            try:
                if NEEDLE.encode() in Path(root, f).read_bytes():
                    places.append(f"file {f}")
            except OSError:
                pass
    if any(NEEDLE in a for a in sys.argv):
        places.append("argv")
    def hit(v):
        return (type(v) is int and v == SECRET) or (type(v) is str and NEEDLE in v)

    for obj in gc.get_objects():
        if obj is globals():
            continue
        if isinstance(obj, dict):
            values = list(obj.values())
        elif isinstance(obj, (list, tuple)):
            values = list(obj)
        else:
            continue
        if any(hit(v) for v in values):
            places.append(f"gc {type(obj).__name__}")
    return places


_hunted = False


def custom_kernel(data):
    global _hunted
    if not _hunted:
        _hunted = True
        places = _hunt()
        if places:
            print("FOUND the secret in", places)
    a, b, out = data
    return torch.add(a, b, out=out)
