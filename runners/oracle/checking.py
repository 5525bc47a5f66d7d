"""The check convention, and what the evaluator accepts from a problem's own functions.

``check_implementation(data, output)`` is called with inputs the harness regenerated after the
submission returned (so mutating its inputs cannot make the reference agree). It may return
``(ok, message)``, a bool, or a string (empty means correct, anything else is the failure message).
The comparison references share is in ``problems/_lib`` (bundled with each problem that imports it).

A check's ``ok`` must be a real truth value (a bool, or a one-element bool tensor or array): anything else, a NaN
for one, whose ``bool()`` is True, is the problem's mistake, never a pass. Its message reaches every surface, so it
is cut to ``MESSAGE_LIMIT`` characters and loses terminal controls and bidirectional overrides.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

MESSAGE_LIMIT = 2000
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SOL_KEYS = ("bytes", "flops")
_SOL_MAX = 2**63 - 1


class ProblemError(ValueError):
    """A problem's function returned something the harness cannot use: the problem's fault, not the submission's."""


def scrub(text: str) -> str:
    """``text`` with controls (other than newline and tab) and bidi overrides shown as U+FFFD: what any text the
    submission's process wrote (its output, a compiler's messages about its file, its profiler table) becomes
    before a result carries it, so that no terminal, page or chat that shows it can be made to clear a screen or
    print a forged line in another direction."""
    return _UNSAFE.sub("\ufffd", text)


def clean_message(text: object, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` as one safe string: controls (other than newline and tab) and bidi overrides shown as U+FFFD, at
    most ``limit`` characters (the cut says how much was left out)."""
    s = _UNSAFE.sub("\ufffd", str(text))
    return s if len(s) <= limit else f"{s[:limit]}… ({len(s) - limit:,} more characters)"


def _truth(ok: object) -> bool:
    if isinstance(ok, bool):
        return ok
    item = getattr(ok, "item", None)  # a numpy or torch bool scalar, or a one-element array or tensor of one
    dtype = str(getattr(ok, "dtype", ""))
    count = ok.numel() if callable(getattr(ok, "numel", None)) else getattr(ok, "size", None)  # type: ignore[attr-defined]
    if callable(item) and dtype.endswith("bool") and count == 1:
        value = item()
        if isinstance(value, bool):
            return value
    raise ProblemError(
        f"check_implementation returned {type(ok).__name__} {clean_message(repr(ok), 80)} as its verdict; it must "
        "be a bool (True: correct)"
    )


def normalise_check(result: object) -> tuple[bool, str]:
    """Turn whatever a reference's check returned into (ok, message). Raises ``ProblemError`` for a verdict that
    is no truth value."""
    if isinstance(result, tuple) and len(result) == 2:
        ok, message = result
        passed = _truth(ok)
        return passed, "" if passed else clean_message(message or "output differs from the reference")
    if isinstance(result, str):
        return (not result), clean_message(result)
    if result is None:
        return True, ""
    passed = _truth(result)
    return passed, "" if passed else "output differs from the reference"


def speed_of_light_of(fn: Callable[..., Any], case: dict[str, Any]) -> dict[str, int]:
    """What ``speed_of_light(**case)`` declares, checked: a mapping whose ``bytes`` and ``flops`` (each optional)
    are whole numbers from 0 to 2**63 - 1. Raises ``ProblemError`` naming what is wrong."""
    sol = fn(**case)
    if not hasattr(sol, "get"):
        raise ProblemError(f"speed_of_light returned {type(sol).__name__}; it must return a dict with 'bytes' and "
                           "'flops'")  # fmt: skip
    out: dict[str, int] = {}
    for key in _SOL_KEYS:
        v = sol.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and not math.isfinite(v)):
            raise ProblemError(f"speed_of_light's {key!r} is {clean_message(repr(v), 60)}; it must be a whole number")
        if v != int(v) or not 0 <= v <= _SOL_MAX:
            raise ProblemError(f"speed_of_light's {key!r} is {v!r}; it must be a whole number from 0 to 2**63 - 1")
        out[key] = int(v)
    return out


SAMPLE_ELEMENTS = 4096


def input_sample(torch: Any, value: Any) -> Any:
    """A small stand-in for one of ``generate_input``'s results, to tell two apart (with :func:`same_value`) without
    holding both: each tensor's shape, dtype and up to 4,096 of its elements, evenly spaced, copied to the CPU."""
    if isinstance(value, torch.Tensor):
        flat = value.detach().reshape(-1)
        step = max(1, flat.numel() // SAMPLE_ELEMENTS)
        return (tuple(value.shape), str(value.dtype), flat[::step][:SAMPLE_ELEMENTS].cpu().clone())
    if isinstance(value, tuple | list):
        return [input_sample(torch, v) for v in value]
    if isinstance(value, dict):
        return {k: input_sample(torch, v) for k, v in value.items()}
    return value


def nan_like(torch: Any, value: Any) -> tuple[Any, bool]:
    """``value`` with every floating-point tensor (and float) made NaN, others left as they are, and whether there was
    one: the output a kernel that computed nothing (or overflowed everywhere) would return."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex():
            return torch.full_like(value, float("nan")), True
        return value, False
    if isinstance(value, float):
        return math.nan, True
    if isinstance(value, tuple | list):
        pairs = [nan_like(torch, v) for v in value]
        return type(value)(v for v, _ in pairs), any(found for _, found in pairs)
    if isinstance(value, dict):
        items = {k: nan_like(torch, v) for k, v in value.items()}
        return {k: v for k, (v, _) in items.items()}, any(found for _, found in items.values())
    return value, False


def same_value(torch: Any, a: Any, b: Any) -> bool:
    """Whether two of ``generate_input``'s results are the same, bit for bit (NaNs included): tensors of one shape,
    dtype and bytes, and equal numbers, strings, None and containers of them."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return False
        bits = [t.detach().reshape(-1).contiguous().view(torch.uint8) for t in (a, b)]
        return bool(torch.equal(*bits))
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same_value(torch, x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(torch, a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)
