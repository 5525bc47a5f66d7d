# ruff: noqa: UP008  (KernelBench writes super(Model, self), and the template must keep working with it)
# A hand-written task in the KernelBench format (level 1: one operator), for the importer's tests.
import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for fp32 matrices."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 512
K = 256
N = 384


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
