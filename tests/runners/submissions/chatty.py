import sys

import torch


def custom_kernel(data):
    a, b, out = data
    print("x" * 100_000)  # far past the 16 KiB that is kept
    print("to stderr", file=sys.stderr)
    return torch.add(a, b, out=out)
