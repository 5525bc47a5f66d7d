"""The "best score over time" chart of ``/leaderboard show``: matplotlib to PNG bytes, no global state.

Uses ``matplotlib.figure.Figure`` with the Agg canvas directly (not pyplot), so it is safe in a
worker thread and leaves nothing behind between calls.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from datetime import datetime

from bot.render import format_ns


def best_over_time(points: Sequence[tuple[datetime, float]]) -> list[tuple[datetime, float]]:
    """The running best (lowest) score: one point each time the best improved."""
    out: list[tuple[datetime, float]] = []
    for when, score in sorted(points):
        if not out or score < out[-1][1]:
            out.append((when, score))
    return out


def score_chart_png(title: str, series: Mapping[str, Sequence[tuple[datetime, float]]]) -> bytes | None:
    """A PNG of the best score over time, one line per device; None when there is nothing to draw."""
    lines = {device: best_over_time(points) for device, points in series.items() if points}
    if not lines:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(8, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for device, best in sorted(lines.items()):
        xs = [when for when, _ in best]
        ys = [score for _, score in best]
        # A step line that runs on to the last known time: the best holds until it is beaten.
        ax.step(xs, ys, where="post", marker="o", markersize=3, label=device)
    ax.set_title(f"{title}: best score over time (lower is better)")
    ax.set_ylabel("score")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_ns(v)))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")
    fig.autofmt_xdate()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
