"""Formatting shared by every surface, written once: how a duration reads."""

from __future__ import annotations

import math

MISSING = "–"
"""What a missing value reads as."""


def format_ns(ns: float | None) -> str:
    """A duration in nanoseconds with a unit a person reads at a glance: 812 ns, 12.3 µs, 4.56 ms, 1.20 s."""
    if ns is None or not math.isfinite(ns):
        return MISSING
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            value = ns / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{ns:.0f} ns"
