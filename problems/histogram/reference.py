"""histogram: counts of each of the 256 byte values in a uint8 vector, as int32."""

from __future__ import annotations

import torch


def _device() -> torch.device:
    """Where inputs live: the harness's default device if it set one, else CUDA when present, else the CPU."""
    default = torch.get_default_device()
    if default.type != "cpu" or not torch.cuda.is_available():
        return default
    return torch.device("cuda")
def generate_input(size: int, contention: int, seed: int) -> tuple[torch.Tensor]:
    """Uniform bytes, then `contention` percent of the elements (chosen at random) set to one hot value."""
    device = _device()
    gen = torch.Generator(device=device).manual_seed(seed)
    data = torch.randint(0, 256, (size,), device=device, dtype=torch.uint8, generator=gen)
    hot = torch.randint(0, 256, (1,), device=device, dtype=torch.uint8, generator=gen)
    mask = torch.rand(size, device=device, generator=gen) < contention / 100
    return (torch.where(mask, hot, data),)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    return torch.bincount(x.to(torch.int64), minlength=256).to(torch.int32)


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    # Counts are exact: any difference is an error.
    return _compare(output, ref_kernel(data).double(), torch.int32, atol=0.0, rtol=0.0)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": size + 256 * 4, "flops": size}


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
