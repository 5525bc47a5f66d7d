"""vectorsum: the sum of a large fp32 vector, as a 0-dimensional fp32 tensor. The reference sums in fp64."""

from __future__ import annotations

import math

import torch

# Allowed error: TOLERANCE * 2**-24 * ||x||_2. Measured in fp32 (numpy, 1e5 to 1.6e7 elements): tree sums err
# by about 3 such units, sequential sums of chunks of up to 65536 elements by at most 80, a fully sequential
# sum of 1e6 elements by 306; leaving out one element or summing in bf16 by thousands
# (tests/problems/test_problem_checks.py keeps both sides).
TOLERANCE = 384


def _device() -> torch.device:
    """Where inputs live: the harness's default device if it set one, else CUDA when present, else the CPU."""
    default = torch.get_default_device()
    if default.type != "cpu" or not torch.cuda.is_available():
        return default
    return torch.device("cuda")
def generate_input(size: int, seed: int) -> tuple[torch.Tensor]:
    device = _device()
    gen = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(size, device=device, dtype=torch.float32, generator=gen),)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return x.sum(dtype=torch.float64).to(torch.float32)


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    (x,) = data
    expected = x.sum(dtype=torch.float64)
    if isinstance(output, torch.Tensor) and output.numel() == 1 and output.dim() <= 1:
        output = output.reshape(())
    allowed = TOLERANCE * 2**-24 * math.sqrt(float(x.double().square().sum()))
    return _compare(output, expected, torch.float32, atol=allowed, rtol=0.0)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": 4 * size + 4, "flops": size}


def _compare(
    output: object, expected: torch.Tensor, dtype: torch.dtype, atol: float | torch.Tensor, rtol: float
) -> tuple[bool, str]:
    """Elementwise |output - expected| <= atol + rtol * |expected|; the message names the first mismatch."""
    if not isinstance(output, torch.Tensor):
        return False, f"expected a torch.Tensor, got {type(output).__name__}"
    if output.shape != expected.shape:
        return False, f"output shape {tuple(output.shape)}, expected {tuple(expected.shape)}"
    if output.dtype != dtype:
        return False, f"output dtype {output.dtype}, expected {dtype}"
    if output.device != expected.device:
        return False, f"output is on {output.device}, expected {expected.device}"
    # In place where possible: at the largest benchmarks these temporaries are gigabytes.
    allowed = expected.abs().mul_(rtol).add_(atol)
    bad = output.to(expected.dtype, copy=True).sub_(expected).abs_().le_(allowed).logical_not_()  # NaN counts as wrong
    count = int(bad.sum())
    if count == 0:
        return True, ""
    first = bad.flatten().to(torch.uint8).argmax()
    at = tuple(int(i) for i in torch.unravel_index(first, bad.shape))
    return False, (
        f"{count} of {expected.numel()} elements differ; first at {at}: got {output[at].item():.7g}, "
        f"expected {expected[at].item():.7g} (allowed error {allowed[at].item():.3g})"
    )
