"""prefixsum: the inclusive scan of an fp32 vector, y[i] = x[0] + ... + x[i]. The reference scans in fp64."""

from __future__ import annotations

import torch

# Allowed error at i: TOLERANCE * 2**-24 * sqrt(i + 1) * ||x[0..i]||_2, which grows linearly with i.
# Adding x[0..i] one after another in fp32 (the simplest correct scan, and what torch.cumsum does on a CPU)
# has a rounding error of about 2**-24 * i * rms(x) / sqrt(3) at position i; blocked or tree scans are well
# below that. 8 keeps a sequential scan inside at many standard deviations (tests/problems/test_problem_checks.py),
# while leaving out an element, an exclusive scan or an fp16/bf16 scan are far outside it.
TOLERANCE = 8


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
    return torch.cumsum(x.double(), 0).to(torch.float32)


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    (x,) = data
    x64 = x.double()
    expected = torch.cumsum(x64, 0)
    count = torch.arange(1, x.numel() + 1, device=x.device, dtype=torch.float64)
    allowed = TOLERANCE * 2**-24 * (count * torch.cumsum(x64.square(), 0)).sqrt()
    return _compare(output, expected, torch.float32, atol=allowed, rtol=2**-24)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": 8 * size, "flops": size}


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
