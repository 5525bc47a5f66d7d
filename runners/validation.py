"""Pydantic validation errors as text a person reads: the one helper every layer uses to turn them into messages.

Pydantic prefixes a validator's own words with ``Value error, `` (or ``Assertion failed, ``); users should see
only the words. ``runners`` is the lowest layer, so the core and every surface can import this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_PREFIXES = ("Value error, ", "Assertion failed, ")


def error_message(err: Mapping[str, Any]) -> str:
    """One error of ``ValidationError.errors()`` as its message, without pydantic's prefix."""
    ctx = err.get("ctx") or {}
    if err.get("type") == "value_error" and "error" in ctx:
        return str(ctx["error"])
    msg = str(err.get("msg", ""))
    for prefix in _PREFIXES:
        if msg.startswith(prefix):
            return msg[len(prefix) :]
    return msg


def error_location(err: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    """Where the error is, as ``field.sub.0`` (parts in ``skip``, such as FastAPI's ``body``, left out)."""
    skipped = set(skip)
    return ".".join(str(part) for part in err.get("loc", ()) if part not in skipped)
