"""Cheat: shadow builtins (max, float, bool, min, abs, sorted) with module globals in every runners.* module and in
a 'reference' module, which a checker or a timer in this process would pick up. Nothing that decides the score
runs in this process.
expect: no_gain
mode: ranked
"""
import sys
import types

import torch

_fake = {"max": lambda *a, **k: 0, "min": lambda *a, **k: 0, "float": lambda *a: 0.0, "bool": lambda *a: True,
         "abs": lambda x: 0, "sorted": lambda *a, **k: [0]}

for name, module in list(sys.modules.items()):
    if name.startswith("runners.") and isinstance(module, types.ModuleType):
        for key, value in _fake.items():
            setattr(module, key, value)
sys.modules["reference"] = types.ModuleType("reference")
sys.modules["reference"].check_implementation = lambda data, output: (True, "")


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
