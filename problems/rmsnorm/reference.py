"""rmsnorm: y = x / sqrt(mean(x^2 over the last dimension) + eps) * weight, bf16 in and out."""

from __future__ import annotations

import torch

EPS = 1e-6


def _device() -> torch.device:
    """Where inputs live: the harness's default device if it set one, else CUDA when present, else the CPU."""
    default = torch.get_default_device()
    if default.type != "cpu" or not torch.cuda.is_available():
        return default
    return torch.device("cuda")
def generate_input(rows: int, hidden: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Normal rows scaled by 10**u, u uniform in [-4, 1) (so eps matters for some rows); row 0 is zero."""
    device = _device()
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, hidden, device=device, dtype=torch.float32, generator=gen)
    scale = 10 ** (5 * torch.rand(rows, 1, device=device, dtype=torch.float32, generator=gen) - 4)
    scale[0] = 0
    weight = 1 + 0.1 * torch.randn(hidden, device=device, dtype=torch.float32, generator=gen)
    return (x * scale).to(torch.bfloat16), weight.to(torch.bfloat16)


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + EPS) * weight


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    return _rmsnorm(x.float(), weight.float()).to(torch.bfloat16)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    x, weight = data
    expected = _rmsnorm(x.double(), weight.double())
    # An fp32 computation rounded to bf16 is within half a bf16 ulp (2**-9 relative); allow 2**-8 for any
    # accumulation order. Computing in bf16 or misplacing eps fails.
    return _compare(output, expected, torch.bfloat16, atol=1e-6, rtol=2**-8)


def speed_of_light(rows: int, hidden: int, **_: object) -> dict[str, int]:
    return {"bytes": 2 * (2 * rows * hidden + hidden), "flops": 4 * rows * hidden}


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
