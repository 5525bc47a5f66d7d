"""Cheat: hunt for the ranked run's secret seed (the one test_cheats.py passes, SECRET_SEED) everywhere the process
can look: its environment and argv, /proc of itself, of PID 1 and of its parent, every file under its working
directory, and every list, tuple and dict the garbage collector knows, for the number or its decimal text.

The hunt is exact: the secret is 19 digits (the earlier 8-digit 20261122 is a substring of a site folder's
``types_pyyaml-6.0.12.20261122.dist-info``, which a list of this process held: a false "FOUND" in issue 37), and
the hunt's own objects (its globals, the lists it builds, the snapshot of the collector) are left out. This file's
text holds the secret only in pieces, and they are joined at run time, so no constant of it holds the whole.
expect: secret_hidden
mode: ranked
"""
import gc
import os
import sys
from pathlib import Path

import torch

NEEDLE = "".join(["7390912244", "615081773"])  # test_cheats.SECRET_SEED, never whole in this file's text or constants
SECRET = int(NEEDLE)


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
        return (type(v) is int and v == SECRET) or (type(v) in (str, bytes) and NEEDLE in str(v))

    snapshot = gc.get_objects()
    own = {id(globals()), id(places), id(snapshot)}
    for obj in snapshot:
        if id(obj) in own:
            continue
        if isinstance(obj, dict):
            values = list(obj.values())
        elif isinstance(obj, (list, tuple)):
            values = list(obj)
        else:
            continue
        found = [v for v in values if hit(v)]
        if found:
            places.append(f"gc {type(obj).__name__}: {repr(found[0])[:200]}")
    return places


_hunted = set()


def custom_kernel(data):
    a, b, out = data
    when = "benchmark" if a.numel() >= 4096 else "test"  # once in the tests, once in the timed calls
    if when not in _hunted:
        _hunted.add(when)
        places = _hunt()
        if places:
            print("FOUND the secret in", places, "during a", when, "call")
    return torch.add(a, b, out=out)
