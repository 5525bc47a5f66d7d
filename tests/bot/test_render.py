"""The pure formatters of run results: what a competitor reads in a report."""

from __future__ import annotations

import pytest

from bot.render import (
    format_case,
    format_ns,
    lines_of_benchmarks,
    lines_of_tests,
    logs_text,
    one_line,
    result_lines,
)
from runners.contract import (
    BenchmarkResult,
    DataType,
    Mode,
    RooflinePeaks,
    RunResult,
    TestResult,
    TimingStats,
    Verdict,
)


def stats(median: float, std: float = 10.0, samples: int = 100) -> TimingStats:
    return TimingStats(
        samples=samples,
        median_ns=median,
        mean_ns=median,
        std_ns=std,
        stderr_ns=1.0,
        min_ns=median - 3 * std,
        max_ns=median + 3 * std,
        p25_ns=median - std / 2,
        p75_ns=median + std,
    )


@pytest.mark.parametrize(
    ("ns", "text"),
    [(812, "812 ns"), (12_345, "12.3 µs"), (4_560_000, "4.56 ms"), (1.2e9, "1.20 s"), (250_000, "250 µs"), (None, "–")],
)
def test_format_ns_picks_a_readable_unit(ns: float | None, text: str) -> None:
    assert format_ns(ns) == text


def test_format_case_is_cut_to_its_limit() -> None:
    assert format_case({"size": 1024, "seed": 3}) == "size=1024, seed=3"
    long = format_case({"shape": list(range(100))}, limit=20)
    assert len(long) == 20 and long.endswith("…")


def test_one_line_flattens_a_multiline_message() -> None:
    flat = one_line("mismatch at index 3\n  expected 1.0\n  got 2.0\n")
    assert flat == "mismatch at index 3 / expected 1.0 / got 2.0"
    assert len(one_line("x" * 1000, limit=50)) == 50


def test_failed_test_shows_its_verdict_and_mismatch_message() -> None:
    lines = lines_of_tests(
        [
            TestResult(index=0, case={"size": 8}, verdict=Verdict.ACCEPTED),
            TestResult(index=1, case={"size": 9}, verdict=Verdict.WRONG_ANSWER, message="mismatch at [3]: 1.0 != 2.0"),
        ]
    )
    assert lines == [
        "✅ test 1 (size=8)",
        "❌ test 2 (size=9): wrong answer: mismatch at [3]: 1.0 != 2.0",
    ]


def test_benchmark_shows_median_spread_and_its_roofline_share() -> None:
    bench = BenchmarkResult(
        index=0, case={"size": 1 << 20}, verdict=Verdict.ACCEPTED, stats=stats(10_000, 200), bytes_moved=24_000_000,
        roofline_ns=8_000.0, roofline_share=0.8, roofline_limit="memory",
    )  # fmt: skip
    [line] = lines_of_benchmarks([bench])
    assert line == "✅ bench 1 (size=1048576): 10.0 µs (IQR 9.90–10.2 µs, n=100), 80% of roofline (memory)"
    matmul = bench.model_copy(update={"roofline_share": 0.723, "roofline_limit": "fp16 tensor"})
    assert lines_of_benchmarks([matmul])[0].endswith(", 72% of roofline (fp16 tensor)")


def test_no_roofline_share_is_shown_where_the_runner_had_none() -> None:
    bench = BenchmarkResult(index=0, case={}, verdict=Verdict.ACCEPTED, stats=stats(1_000_000), bytes_moved=10**9)
    assert "roofline" not in lines_of_benchmarks([bench])[0]  # the CPU, an unknown GPU, an old result


def test_the_score_line_carries_the_overall_share_and_whose_peaks() -> None:
    peaks = RooflinePeaks(device="H100", dtype=DataType.FP16, memory_bytes_per_s=3.35e12, flops_per_s=989.4e12,
                          source="NVIDIA H100 datasheet (SXM, dense)")  # fmt: skip
    result = RunResult(verdict=Verdict.ACCEPTED, mode=Mode.BENCHMARK, score_ns=240_000.0, roofline_share=0.72,
                       roofline=peaks)  # fmt: skip
    assert result_lines(result)[-1] == (
        "score: **240 µs** · 72% of roofline overall (H100 datasheet peaks: 3.35 TB/s, 989.4 TFLOP/s fp16)"
    )
    assert result_lines(result.model_copy(update={"roofline_share": None}))[-1] == "score: **240 µs**"


def test_failed_benchmark_shows_the_verdict_not_a_time() -> None:
    bench = BenchmarkResult(index=2, case={"n": 1}, verdict=Verdict.TIMEOUT, message="took longer than 300 s")
    assert lines_of_benchmarks([bench]) == ["❌ bench 3 (n=1): time limit exceeded: took longer than 300 s"]


def test_result_lines_summarise_many_passing_tests_but_show_every_failure() -> None:
    tests = [TestResult(index=i, case={"i": i}, verdict=Verdict.ACCEPTED) for i in range(20)]
    tests[7] = TestResult(index=7, case={"i": 7}, verdict=Verdict.WRONG_ANSWER, message="off by one")
    result = RunResult(verdict=Verdict.WRONG_ANSWER, mode=Mode.TEST, message="test 8 failed", tests=tests)
    lines = result_lines(result)
    assert lines[0] == "❌ **wrong answer**: test 8 failed"
    assert "tests: 19/20 passed" in lines
    assert "❌ test 8 (i=7): wrong answer: off by one" in lines
    assert not any(line.startswith("✅ test") for line in lines)


def test_result_lines_end_with_the_score() -> None:
    result = RunResult(
        verdict=Verdict.ACCEPTED,
        mode=Mode.BENCHMARK,
        benchmarks=[BenchmarkResult(index=0, case={}, verdict=Verdict.ACCEPTED, stats=stats(5_000))],
        score_ns=5_000,
    )
    assert result_lines(result)[-1] == "score: **5.00 µs**"


def test_logs_text_names_each_part_and_skips_empty_ones() -> None:
    result = RunResult(
        verdict=Verdict.COMPILE_ERROR, mode=Mode.TEST, compile_output="error: x", stderr="boom", stderr_truncated=True
    )
    text = logs_text(result)
    assert "===== compile output =====\nerror: x" in text
    assert "===== stderr (truncated) =====\nboom" in text
    assert "stdout" not in text
    assert logs_text(RunResult(verdict=Verdict.ACCEPTED, mode=Mode.TEST)) == ""
