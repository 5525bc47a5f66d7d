"""sort: fp32 values in ascending order."""

from __future__ import annotations

import torch


def _device() -> torch.device:
    """Where inputs live: the harness's default device if it set one, else CUDA when present, else the CPU."""
    default = torch.get_default_device()
    if default.type != "cpu" or not torch.cuda.is_available():
        return default
    return torch.device("cuda")
def generate_input(size: int, seed: int) -> tuple[torch.Tensor]:
    """Normal values with spread 1000 rounded to multiples of 1/8: many distinct values and many repeats."""
    device = _device()
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(size, device=device, dtype=torch.float32, generator=gen)
    return ((x * 8000).round() / 8,)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return torch.sort(x).values


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    # A sorted permutation of the input is unique: the check is exact.
    return _compare(output, ref_kernel(data), torch.float32, atol=0.0, rtol=0.0)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    # A lower bound: read every value once and write it once.
    return {"bytes": 8 * size, "flops": 0}


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
