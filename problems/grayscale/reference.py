"""grayscale: an RGB image (H x W x 3, fp32) to its luminance (H x W, fp32)."""

from __future__ import annotations

import torch

WEIGHTS = (0.2989, 0.5870, 0.1140)


def _device() -> torch.device:
    """Where inputs live: the harness's default device if it set one, else CUDA when present, else the CPU."""
    default = torch.get_default_device()
    if default.type != "cpu" or not torch.cuda.is_available():
        return default
    return torch.device("cuda")
def generate_input(height: int, width: int, seed: int) -> tuple[torch.Tensor]:
    device = _device()
    gen = torch.Generator(device=device).manual_seed(seed)
    return (torch.rand(height, width, 3, device=device, dtype=torch.float32, generator=gen),)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (image,) = data
    r, g, b = image.unbind(-1)
    return WEIGHTS[0] * r + WEIGHTS[1] * g + WEIGHTS[2] * b


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    (image,) = data
    expected = ref_kernel((image.double(),))
    # Three fp32 products and two sums in any order (with or without FMA) stay within ~3 ulp of the exact value.
    return _compare(output, expected, torch.float32, atol=1e-6, rtol=4e-7)


def speed_of_light(height: int, width: int, **_: object) -> dict[str, int]:
    return {"bytes": height * width * (3 * 4 + 4), "flops": 5 * height * width}


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
