"""Cheat (GPU): start the work on a stream that does not wait for the evaluator's "go", so it runs before the timed
window opens. Before "go" the call's inputs are not in the shared memory yet: the work reads the last call's.
expect: wrong_answer
mode: ranked
device: cuda
"""
import torch

_side = []


def custom_kernel(data):
    if not _side:
        _side.append(torch.cuda.Stream())
    a, b, out = data
    with torch.cuda.stream(_side[0]):  # deliberately not ordered after the current stream's wait for "go"
        torch.add(a, b, out=out)
    return out
