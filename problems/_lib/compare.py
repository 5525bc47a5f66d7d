"""Comparing a submission's output with an exact (fp64 or fp32) expected tensor, elementwise, within a tolerance."""

from __future__ import annotations

import torch


def compare(
    output: object, expected: torch.Tensor, dtype: torch.dtype, *, atol: float | torch.Tensor, rtol: float
) -> tuple[bool, str]:
    """``(True, "")`` when ``output`` is a ``dtype`` tensor of ``expected``'s shape and device and every element is
    within ``|output - expected| <= atol + rtol * |expected|`` (NaN never is); otherwise ``(False, why)``, naming the
    wrong type, shape, dtype or device, or how many elements differ and the first of them.

    ``expected`` is the exact answer in a wider type than the output (fp64, or fp32 where that is exact), so the
    tolerance is all the error a correct kernel's own rounding and order of operations may add. ``atol`` may be a
    tensor (a per-element bound, broadcast against ``expected``).
    """
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
