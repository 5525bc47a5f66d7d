"""Cheat: find the job through gc and shrink the benchmark cases (time a tiny input, report the big one). The job
lives in the evaluator, another process: there is nothing to find.
expect: no_gain
mode: benchmark
"""
import gc

import torch


def custom_kernel(data):
    for obj in gc.get_objects():
        if isinstance(obj, dict) and isinstance(obj.get("benchmarks"), list):
            for case in obj["benchmarks"]:
                if isinstance(case, dict):
                    case["size"] = 1
        if type(obj).__name__ in ("Job", "TimingSettings"):
            for name in ("benchmarks", "max_samples"):
                try:
                    object.__setattr__(obj, name, [] if name == "benchmarks" else 2)
                except Exception:
                    pass
    a, b, out = data
    return torch.add(a, b, out=out)
