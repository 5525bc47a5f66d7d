"""The best-score-over-time chart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.chart import best_over_time, score_chart_png

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_best_over_time_keeps_only_improvements() -> None:
    points = [(T0 + timedelta(hours=h), s) for h, s in [(2, 50.0), (0, 100.0), (1, 120.0), (3, 40.0)]]
    assert best_over_time(points) == [(T0, 100.0), (T0 + timedelta(hours=2), 50.0), (T0 + timedelta(hours=3), 40.0)]


def test_chart_is_a_png_and_none_without_points() -> None:
    png = score_chart_png("vectoradd", {"H100": [(T0, 1000.0), (T0 + timedelta(days=1), 800.0)], "cpu": []})
    assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    assert score_chart_png("vectoradd", {"H100": []}) is None


def labels(fig) -> list[str]:  # type: ignore[no-untyped-def]
    fig.canvas.draw()
    [ax] = fig.axes
    low, high = ax.get_ylim()
    return [t.get_text() for t in ax.get_yticklabels() if t.get_text() and low <= t.get_position()[1] <= high]


def test_score_axis_is_logarithmic_with_duration_ticks_never_zero() -> None:
    from bot.chart import score_figure

    # A 30x improvement: on a linear axis the later points lie flat near a floor labelled "0 ns".
    points = [(T0, 3_000_000.0), (T0 + timedelta(days=1), 1_000_000.0), (T0 + timedelta(days=2), 100_000.0)]
    fig = score_figure("matmul", {"H100": points}, now=T0 + timedelta(days=3))
    assert fig is not None
    [ax] = fig.axes
    assert ax.get_yscale() == "log"
    shown = labels(fig)
    assert shown and "0 ns" not in shown
    assert {"100 µs", "1.00 ms"} <= set(shown)


def test_a_narrow_range_still_has_a_labelled_tick() -> None:
    from bot.chart import score_figure

    fig = score_figure("add", {"cpu": [(T0, 10_400.0), (T0 + timedelta(hours=1), 10_100.0)]}, now=T0)
    assert labels(fig)


def test_a_single_point_gets_a_time_axis_and_every_line_runs_to_now() -> None:
    from matplotlib.dates import num2date

    from bot.chart import score_figure

    now = T0 + timedelta(days=2)
    fig = score_figure("add", {"H100": [(T0, 5000.0)], "cpu": [(T0 + timedelta(days=1), 9000.0)]}, now=now)
    [ax] = fig.axes
    left, right = (num2date(x) for x in ax.get_xlim())
    assert left < T0 and right > now
    for line in ax.get_lines():
        if line.get_label() in ("H100", "cpu"):
            assert num2date(line.get_xdata(orig=False)[-1]) == now

    single = score_figure("add", {"H100": [(T0, 5000.0)]}, now=T0)
    left, right = (num2date(x) for x in single.axes[0].get_xlim())
    assert right - left >= timedelta(hours=1)
