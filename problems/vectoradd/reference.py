"""vectoradd: out = a + b for fp16 N x N matrices, written into the given ``out`` and returned."""

from __future__ import annotations

import torch


def _device() -> torch.device:
    """Where inputs live: the harness's default device if it set one, else CUDA when present, else the CPU."""
    default = torch.get_default_device()
    if default.type != "cpu" or not torch.cuda.is_available():
        return default
    return torch.device("cuda")


def generate_input(size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    device = _device()
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen)
    b = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen)
    # NaN, so that an element a kernel forgets to write can never look right by chance.
    out = torch.full((size, size), float("nan"), device=device, dtype=torch.float16)
    return a, b, out


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    return torch.add(a, b, out=out)


def check_implementation(data: tuple[torch.Tensor, ...], output: object) -> tuple[bool, str]:
    a, b, _ = data
    expected = a.float() + b.float()
    # fp16 addition is correctly rounded: a correct kernel is within half an fp16 ulp of the exact sum.
    return _compare(output, expected, torch.float16, atol=1e-7, rtol=2**-11)


def speed_of_light(size: int, **_: object) -> dict[str, int]:
    return {"bytes": 3 * size * size * 2, "flops": size * size}


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
