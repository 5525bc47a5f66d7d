"""Where inputs live and seeded random tensors there: ``Inputs(seed).randn(rows, cols, dtype=torch.float16)``."""

from __future__ import annotations

import torch


def device() -> torch.device:
    """Where inputs live: the harness's default device if it set one (it hides CUDA for a cpu run), else CUDA when
    present, else the CPU."""
    default = torch.get_default_device()
    if default.type != "cpu" or not torch.cuda.is_available():
        return default
    return torch.device("cuda")


class Inputs:
    """Random tensors on ``device()`` drawn from one generator seeded with the case's seed: the same seed gives the
    same tensors, in the order they are drawn. Generated on the device and vectorised (benchmark cases have
    hundreds of millions of elements)."""

    def __init__(self, seed: int) -> None:
        self.device = device()
        self.generator = torch.Generator(device=self.device).manual_seed(seed)

    def randn(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Standard normal values."""
        return torch.randn(*shape, device=self.device, dtype=dtype, generator=self.generator)

    def rand(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Uniform values in [0, 1)."""
        return torch.rand(*shape, device=self.device, dtype=dtype, generator=self.generator)

    def randint(self, low: int, high: int, *shape: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
        """Uniform integers in [low, high)."""
        return torch.randint(low, high, shape, device=self.device, dtype=dtype, generator=self.generator)

    def nans(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A tensor a kernel writes its output into, filled with NaN so that an element it forgets cannot look
        right by chance (draws nothing from the generator)."""
        return torch.full(shape, float("nan"), device=self.device, dtype=dtype)
