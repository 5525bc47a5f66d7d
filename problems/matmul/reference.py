"""matmul: c = a @ b for fp16 a (m x k) and b (k x n), fp16 out."""

from __future__ import annotations

import torch

# Allowed error of c[i, j]: 2**-11 * |c[i, j]| (fp16 rounding of the result) plus
# TOLERANCE * 2**-11 * ||a[i, :]||_2 * ||b[:, j]||_2 / sqrt(k), about 2**-11 times the spread of one product
# sum. Measured (CPU emulation, 512x4096x512): split-K with fp16 partials summed in fp32 errs by at most 3.1
# units, summed in fp16 four ways 4.6 units; bf16 inputs 17-22 units, an fp16 accumulator 40+. 10 sits between
# (tests/problems/test_problem_checks.py keeps both sides; a GPU test checks cuBLAS's own fp16 result at 4096).
TOLERANCE = 10


def _device() -> torch.device:
    """Where inputs live: the harness's default device if it set one, else CUDA when present, else the CPU."""
    default = torch.get_default_device()
    if default.type != "cpu" or not torch.cuda.is_available():
        return default
    return torch.device("cuda")
def generate_input(m: int, k: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    device = _device()
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, device=device, dtype=torch.float16, generator=gen)
    b = torch.randn(k, n, device=device, dtype=torch.float16, generator=gen)
    return a, b


def _exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b in fp32. fp16 values are exact in TF32 and their products exact in fp32, so TF32 may stay on."""
    return a.float() @ b.float()


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    return _exact(a, b).to(torch.float16)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    a, b = data
    expected = _exact(a, b)
    spread = a.float().norm(dim=1, keepdim=True) * b.float().norm(dim=0, keepdim=True) / max(a.shape[1], 1) ** 0.5
    return _compare(output, expected, torch.float16, atol=TOLERANCE * 2**-11 * spread, rtol=2**-11)


def speed_of_light(m: int, k: int, n: int, **_: object) -> dict[str, int]:
    return {"bytes": 2 * (m * k + k * n + m * n), "flops": 2 * m * n * k}


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
