"""The best-score-over-time chart of a leaderboard page, drawn as inline SVG on the server (no script, no image).

Scores span orders of magnitude (a first naive kernel and a tuned one differ 30× and more), so the score axis is
logarithmic: equal ratios are equal distances and a late 10 % gain still shows. The line is the best score so far,
a step at each improvement, running on to "now"; a chart of one point is a dot on a flat line with a sane range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from leaderboards.formatting import format_ns

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 12, 28
"""The plot area's margins: room for the score labels on the left and the dates below."""


@dataclass(frozen=True)
class Chart:
    """What the template draws: the step line's points, the improvement dots and the axis labels."""

    width: int
    height: int
    path: str
    dots: tuple[tuple[float, float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    x_ticks: tuple[tuple[float, str], ...]
    plot: tuple[int, int, int, int]
    """left, top, right, bottom of the plot area."""


def best_so_far(points: Sequence[tuple[datetime, float]]) -> list[tuple[datetime, float]]:
    """The points where the best (lowest) score improved, oldest first."""
    best: list[tuple[datetime, float]] = []
    for when, score in sorted(points, key=lambda p: p[0]):
        if score > 0 and math.isfinite(score) and (not best or score < best[-1][1]):
            best.append((when, score))
    return best


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values for a log axis over [low, high]: 1-2-5 steps per decade, thinned to at most 6; at least the two
    ends when the range holds none."""
    ticks: list[float] = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0**exponent
            if low <= value <= high:
                ticks.append(value)
    if len(ticks) > 6:
        decades = [t for t in ticks if math.isclose(math.log10(t), round(math.log10(t)))]
        ticks = decades if len(decades) >= 2 else ticks[:: math.ceil(len(ticks) / 6)]
    return ticks if len(ticks) >= 2 else [low, high]


def score_chart(points: Sequence[tuple[datetime, float]], now: datetime) -> Chart | None:
    """The chart of a device's history, or None when nobody has a score yet."""
    best = best_so_far(points)
    if not best:
        return None
    right_edge = max(now, best[-1][0])
    start = best[0][0]
    if right_edge - start < timedelta(hours=1):  # one point, or all within moments: an hour of room
        start = right_edge - timedelta(hours=1)
    low, high = min(s for _, s in best), max(s for _, s in best)
    # Room above and below on the log scale: a single score sits in the middle of a ×4 range.
    pad = max(math.log10(high / low) * 0.1, math.log10(2.0))
    log_low, log_high = math.log10(low) - pad, math.log10(high) + pad
    x0, x1, y0, y1 = LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM
    span_s = (right_edge - start).total_seconds()

    def x(when: datetime) -> float:
        return round(x0 + (when - start).total_seconds() / span_s * (x1 - x0), 1)

    def y(score: float) -> float:
        return round(y1 - (math.log10(score) - log_low) / (log_high - log_low) * (y1 - y0), 1)

    coords: list[tuple[float, float]] = []
    for i, (when, score) in enumerate(best):
        if i:
            coords.append((x(when), y(best[i - 1][1])))  # the step: flat until the improvement
        coords.append((x(when), y(score)))
    coords.append((x(right_edge), y(best[-1][1])))  # the line runs on to now
    path = "M" + " L".join(f"{cx},{cy}" for cx, cy in coords)
    dots = tuple((x(w), y(s), f"{format_ns(s)} on {w:%Y-%m-%d %H:%M} UTC") for w, s in best)
    y_ticks = tuple((y(v), format_ns(v)) for v in log_ticks(10**log_low, 10**log_high))
    fmt = "%H:%M" if span_s < 2 * 86400 else "%b %d"
    x_ticks = tuple((x(w), w.strftime(fmt)) for w in _time_ticks(start, right_edge))
    return Chart(WIDTH, HEIGHT, path, dots, y_ticks, x_ticks, (x0, y0, x1, y1))


def _time_ticks(start: datetime, end: datetime, count: int = 4) -> list[datetime]:
    step = (end - start) / count
    return [start + step * i for i in range(count + 1)]
