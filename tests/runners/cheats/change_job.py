"""Cheat: find the job through gc and shrink the benchmark cases (time a tiny input, report the big one).
expect: rejected
mode: benchmark
words: changed the job
"""
import gc

import torch


def custom_kernel(data):
    for obj in gc.get_objects():
        if isinstance(obj, dict) and isinstance(obj.get("benchmarks"), list) and isinstance(obj.get("timing"), dict):
            for case in obj["benchmarks"]:
                case["size"] = 1
            obj["timing"]["max_samples"] = 2
    a, b, out = data
    return torch.add(a, b, out=out)
