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
