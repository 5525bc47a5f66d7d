"""Cheat (GPU): launch the work on another CUDA stream and return before it finishes. The evaluator's window closes
only when this process's GPU work is done (the GPU time-slices the two processes), so the work is counted.
expect: no_gain
mode: benchmark
device: cuda
"""
import torch

_side = None


def custom_kernel(data):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    a, b, out = data
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        for _ in range(20):
            torch.add(a, b, out=out)
    return out
