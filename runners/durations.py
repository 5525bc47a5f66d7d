"""How a duration reads, written once for every layer: the runner's messages, the CLI, the bot and the web
(``leaderboards.formatting`` re-exports it for the surfaces)."""

from __future__ import annotations

import math

MISSING = "–"
"""What a missing value reads as."""

_UNITS = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))


def _three_figures(value: float) -> str:
    """``value`` (not negative) to three significant figures, trailing zeros kept: 1.20, 12.3, 812, 0.500."""
    rounded = float(f"{value:.3g}")  # rounds first, so that 0.9996 becomes 1.00, not 1.000
    if rounded == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(rounded)))
    return f"{rounded:.{decimals}f}"


def format_ns(ns: float | None) -> str:
    """A duration in nanoseconds to three significant figures, the unit chosen by its size:
    812 ns, 12.3 µs, 4.56 ms, 1.20 s (1000 s and over in whole seconds)."""
    if ns is None or not math.isfinite(ns):
        return MISSING
    sign = "-" if ns < 0 else ""
    for unit, scale in _UNITS:
        # The next unit up once the value reaches 1000 in this one, including by rounding (999.7 ns reads 1.00 µs).
        text = _three_figures(abs(ns) / scale)
        if float(text) < 1000:
            return f"{sign}{text} {unit}"
    return f"{sign}{abs(ns) / 1e9:.0f} s"
