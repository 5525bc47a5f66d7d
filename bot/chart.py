"""The "best score over time" chart of ``/leaderboard show``: matplotlib to PNG bytes, no global state.

Uses ``matplotlib.figure.Figure`` with the Agg canvas directly (not pyplot), so it is safe in a worker thread and
leaves nothing behind between calls. The score axis is logarithmic (a 30x improvement is a visible drop, not a
flat line near a floor labelled "0 ns"), with ticks at 1, 2 and 5 of each decade labelled by the shared duration
formatter; every line runs on to "now", since a best holds until it is beaten; one point gets a time axis around it.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from bot.render import format_ns

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Y_PAD = 1.6
"""The score axis spans min/Y_PAD to max*Y_PAD: more than the widest gap (2 to 5) between two ticks, so at least
one labelled tick is always in view."""
MIN_SPAN = timedelta(hours=1)
"""The shortest time axis: a single point (or a few within a minute) sits in an hour's window, not a blank one."""


def best_over_time(points: Sequence[tuple[datetime, float]]) -> list[tuple[datetime, float]]:
    """The running best (lowest) score: one point each time the best improved."""
    out: list[tuple[datetime, float]] = []
    for when, score in sorted(points):
        if not out or score < out[-1][1]:
            out.append((when, score))
    return out


def score_figure(
    title: str, series: Mapping[str, Sequence[tuple[datetime, float]]], now: datetime | None = None
) -> Figure | None:
    """The chart as a matplotlib figure, one step line per device; None when there is nothing to draw."""
    lines = {}
    for device, points in series.items():
        best = [(when, score) for when, score in best_over_time(points) if score > 0]  # a log axis has no 0
        if best:
            lines[device] = best
    if not lines:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    first = min(best[0][0] for best in lines.values())
    last = max(best[-1][0] for best in lines.values())
    now = max(now or datetime.now(UTC), last)
    fig = Figure(figsize=(8, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for device, best in sorted(lines.items()):
        xs: list[Any] = [when for when, _ in best]  # datetimes: matplotlib converts them (its stubs say numbers)
        ys = [score for _, score in best]
        # A step line that runs on to now: the best holds until it is beaten. Markers only where it improved.
        (line,) = ax.step([*xs, now], [*ys, ys[-1]], where="post", label=device)
        ax.plot(xs, ys, "o", markersize=3, color=line.get_color())
    scores = [score for best in lines.values() for _, score in best]
    ax.set_yscale("log")
    ax.set_ylim(min(scores) / Y_PAD, max(scores) * Y_PAD)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_ns(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    span = now - first
    pad = max(span * 0.05, (MIN_SPAN - span) / 2)  # a short history sits in the middle of an hour
    ax.set_xlim(first - pad, now + pad)  # type: ignore[arg-type]
    ax.set_title(f"{title}: best score over time (lower is better)")
    ax.set_ylabel("score (log scale)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper right")
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def score_chart_png(
    title: str, series: Mapping[str, Sequence[tuple[datetime, float]]], now: datetime | None = None
) -> bytes | None:
    """A PNG of the best score over time, one line per device; None when there is nothing to draw."""
    fig = score_figure(title, series, now)
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
