"""One duration formatter and one spread for every surface: three significant figures, the unit by size."""

from __future__ import annotations

import pytest

from leaderboards.formatting import format_ns, format_share, format_spread, format_timing, printable, roofline_text
from runners.contract import BenchmarkResult, TimingStats, Verdict
from runners.stats import timing_stats


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (None, "–"),
        (float("nan"), "–"),
        (0, "0 ns"),
        (812, "812 ns"),
        (999.6, "1.00 µs"),  # rounding carries into the next unit, never "1000 ns"
        (12_345, "12.3 µs"),
        (95_316_475, "95.3 ms"),  # what `run` printed as "95316.475 µs"
        (4_560_000, "4.56 ms"),
        (999_999, "1.00 ms"),
        (1.2e9, "1.20 s"),  # trailing zero kept: three figures
        (250_000, "250 µs"),
        (5e12, "5000 s"),
    ],
)
def test_format_ns_three_figures_unit_by_size(ns: float | None, text: str) -> None:
    assert format_ns(ns) == text


def test_spread_is_the_interquartile_range_with_the_sample_count() -> None:
    stats = timing_stats([95.0e6, 95.1e6, 95.3e6, 95.4e6, 95.6e6, 99.0e6, 95.2e6, 95.5e6, 95.3e6])
    assert stats.p25_ns == pytest.approx(95.2e6) and stats.p75_ns == pytest.approx(95.5e6)
    assert format_timing(stats) == "95.3 ms (IQR 95.2–95.5 ms, n=9)"


def test_a_range_across_units_names_both() -> None:
    stats = timing_stats([990, 995, 999, 1100, 1200, 1300])
    assert format_spread(stats).startswith("IQR 996 ns–1.18 µs")


def test_too_few_samples_warn_instead_of_a_zero_spread() -> None:
    one = timing_stats([1234.0])
    assert format_timing(one) == "1.23 µs (n=1: too few samples for a spread)"
    assert "± 0" not in format_timing(one)


def test_results_stored_before_quartiles_show_their_range() -> None:
    old = TimingStats(samples=20, median_ns=5000, mean_ns=5000, std_ns=10, stderr_ns=2, min_ns=4900, max_ns=5300)
    assert format_spread(old) == "range 4.90–5.30 µs, n=20"


def test_printable_strips_terminal_control_but_keeps_lines_and_tabs() -> None:
    text = "ok\x1b[31m red\x1b[0m\tcol\nnext\x1b]0;pwned\x07 line\x1b]8;;http://x\x1b\\link\x07\x08\r\x9b"
    assert printable(text) == "ok red\tcol\nnext linelink"


@pytest.mark.parametrize(
    ("share", "text"),
    [(None, "–"), (float("nan"), "–"), (0.004, "0.4%"), (0.0999999, "10%"), (0.723, "72%"), (1.0, "100%")],
)
def test_a_roofline_share_reads_the_same_everywhere(share: float | None, text: str) -> None:
    assert format_share(share) == text


def test_a_benchmark_names_what_sets_its_roofline() -> None:
    bench = BenchmarkResult(
        index=0, case={}, verdict=Verdict.ACCEPTED, roofline_share=0.85, roofline_limit="fp16 tensor"
    )
    assert roofline_text(bench) == "85% of roofline (fp16 tensor)"
    assert roofline_text(bench.model_copy(update={"roofline_share": None})) == ""
