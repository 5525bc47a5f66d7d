# A hand-written task in the KernelBench format (level 1: one operator), for the importer's tests.
import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of a batch of fp16 vectors."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 1024 * 16  # arithmetic on literals is a shape constant too


def get_inputs():
    return [torch.randn(batch_size, dim, dtype=torch.float16)]


def get_init_inputs():
    return []
