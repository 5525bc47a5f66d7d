# ruff: noqa: UP008  (KernelBench writes super(Model, self), and the template must keep working with it)
# A hand-written task in the KernelBench format (level 3: a small network), for the importer's tests.
import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2-layer MLP: Linear, ReLU, Linear."""

    def __init__(self, input_size, hidden_size, output_size):
        super(Model, self).__init__()
        self.network = nn.Sequential(
            nn.Linear(input_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, output_size),
        )

    def forward(self, x):
        return self.network(x)


batch_size = 64
input_size = 1000
hidden_size = 400
output_size = 10


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
