"""The check convention and a comparison helper that references may use.

``check_implementation(data, output)`` is called with inputs the harness regenerated after the
submission returned (so mutating its inputs cannot make the reference agree). It may return
``(ok, message)``, a bool, or a string (empty means correct, anything else is the failure message).
"""

from __future__ import annotations

from typing import Any


def normalise_check(result: object) -> tuple[bool, str]:
    """Turn whatever a reference's check returned into (ok, message)."""
    if isinstance(result, tuple) and len(result) == 2:
        ok, message = result
        return bool(ok), "" if ok else str(message or "output differs from the reference")
    if isinstance(result, bool):
        return result, "" if result else "output differs from the reference"
    if isinstance(result, str):
        return (not result), result
    if result is None:
        return True, ""
    return False, f"the reference's check returned {type(result).__name__}; expected (bool, str)"


def compare_tensors(output: Any, expected: Any, *, rtol: float, atol: float, max_report: int = 1) -> tuple[bool, str]:
    """|output - expected| <= atol + rtol*|expected| elementwise; the message names where it first differs.

    Shape, dtype and device must match exactly; NaN in the output is always wrong (unless expected is NaN).
    """
    import torch

    if not isinstance(output, torch.Tensor):
        return False, f"expected a torch.Tensor, got {type(output).__name__}"
    if output.shape != expected.shape:
        return False, f"output shape {tuple(output.shape)}, expected {tuple(expected.shape)}"
    if output.dtype != expected.dtype:
        return False, f"output dtype {output.dtype}, expected {expected.dtype}"
    if output.device != expected.device:
        return False, f"output is on {output.device}, expected {expected.device}"
    got = output.double() if output.is_floating_point() else output.to(torch.float64)
    exp = expected.double() if expected.is_floating_point() else expected.to(torch.float64)
    allowed = atol + rtol * exp.abs()
    bad = ~(((got - exp).abs() <= allowed) | (torch.isnan(got) & torch.isnan(exp)))
    count = int(bad.sum())
    if count == 0:
        return True, ""
    flat = bad.flatten().nonzero()[:max_report, 0].tolist()
    where = []
    for i in flat:
        idx = tuple(int(j) for j in torch.unravel_index(torch.tensor(i), bad.shape)) if bad.dim() else ()
        where.append(f"at {idx}: got {got[idx].item():.7g}, expected {exp[idx].item():.7g}")
    return False, f"{count} of {exp.numel()} elements differ; first " + "; ".join(where)
