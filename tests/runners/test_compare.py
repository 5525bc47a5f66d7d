"""``runners.compare`` and ``kernelcup run A B --compare``: interleaved benchmark runs (A B, then B A, ...), a paired
ratio with a 95% t interval, and a batch of files run in turn."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from harness_helpers import CHEATS, FIXTURES, SUBMISSIONS, build_request
from typer.testing import CliRunner

from kernelcup.cli import build_app
from runners.compare import PRECISION, SETTLE_MIN_ROUNDS, Tally, compare, paired_ratio, round_text, schedule, t975
from runners.contract import (
    BenchmarkResult,
    Comparison,
    Mode,
    RunRequest,
    RunResult,
    SubmissionFile,
    TimingStats,
    Verdict,
)


def test_t_quantiles_are_the_tabled_ones_and_fall_towards_the_normal() -> None:
    assert t975(1) == 12.706 and t975(4) == 2.776 and t975(30) == 2.042
    between = [t975(df) for df in (20, 22, 25, 27, 30, 35, 40, 100, 120, 1000)]
    assert between == sorted(between, reverse=True) and 1.96 < t975(10_000) < 1.961
    with pytest.raises(ValueError):
        t975(0)


def test_the_paired_ratio_is_the_geometric_mean_with_a_t_interval() -> None:
    a = [102.0, 103.0, 101.0, 102.5, 101.5]
    b = [100.0, 101.0, 99.0, 100.5, 99.5]  # A is 2% slower in every round, the machine drifts alike for both
    ratio, low, high = paired_ratio(a, b)
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    assert ratio == pytest.approx(math.exp(sum(logs) / 5))
    assert 1.0 < low < ratio < high and ratio == pytest.approx(1.02, abs=0.001)
    same, lo, hi = paired_ratio([100.0, 101.0, 99.0, 100.0], [100.5, 100.0, 99.5, 99.8])
    assert lo < 1.0 < hi and same == pytest.approx(1.0, abs=0.005)
    for bad in (([1.0], [1.0]), ([1.0, 2.0], [1.0]), ([1.0, 0.0], [1.0, 1.0]), ([1.0, math.inf], [1.0, 1.0])):
        with pytest.raises(ValueError):
            paired_ratio(*bad)


def _stats(m: float) -> TimingStats:
    return TimingStats(samples=10, median_ns=m, mean_ns=m, std_ns=0, stderr_ns=0, min_ns=m, max_ns=m)


def _result(request: RunRequest, medians: list[float], verdict: Verdict = Verdict.ACCEPTED) -> RunResult:
    benches = [
        BenchmarkResult(index=i, case=case, verdict=verdict, stats=_stats(m))
        for i, (case, m) in enumerate(zip(request.benchmarks, medians, strict=True))
    ]
    score = math.exp(sum(math.log(m) for m in medians) / len(medians)) if all(medians) else 0.0
    return RunResult(verdict=verdict, mode=Mode.BENCHMARK, benchmarks=benches, score_ns=score, message="no good")


def _pair() -> tuple[RunRequest, RunRequest]:
    a = build_request(SUBMISSIONS / "correct_torch.py", Mode.BENCHMARK)
    b = a.model_copy(update={"submission": SubmissionFile(name="other.py", content=b"")})
    return a, b


def test_rounds_alternate_the_order_and_the_ratio_comes_from_paired_runs() -> None:
    a, b = _pair()
    calls: list[str] = []
    drift = iter(range(100))

    def run(request: RunRequest) -> RunResult:
        calls.append(request.submission.name)
        slow = 1.0 + next(drift) / 100  # the machine slows down run after run: alternation cancels it
        base = 2.0 if request.submission.name == "other.py" else 1.0
        return _result(request, [1000.0 * base * slow, 4000.0 * base * slow])

    got = compare(a, b, run, rounds=4)
    assert calls == ["correct_torch.py", "other.py", "other.py", "correct_torch.py"] * 2
    assert got.verdict is Verdict.ACCEPTED and got.rounds == 4 and len(got.cases) == 2
    assert got.ratio is not None and got.ci_low is not None and got.ci_high is not None
    assert got.ci_low < 0.5 < got.ci_high and got.ratio == pytest.approx(0.5, abs=0.01)
    assert "correct_torch.py is faster by" in got.message


def test_a_failed_run_stops_the_comparison_and_names_the_file() -> None:
    a, b = _pair()

    def run(request: RunRequest) -> RunResult:
        bad = request.submission.name == "other.py"
        return _result(request, [1.0, 1.0], Verdict.WRONG_ANSWER if bad else Verdict.ACCEPTED)

    got = compare(a, b, run, rounds=4)
    assert got.verdict is Verdict.WRONG_ANSWER and got.message.startswith("other.py: wrong answer")
    assert got.rounds == 0 and got.ratio is None


def test_two_files_of_one_name_are_a_and_b() -> None:
    """A newcomer's walk: two pytorch.py from two folders read "pytorch.py takes 1.0075x the time of pytorch.py"."""
    a, _ = _pair()
    b = a.model_copy(update={"submission": a.submission.model_copy(update={"content": b"# another\n"})})
    got = compare(a, b, lambda request: _result(request, [1000.0, 4000.0]), rounds=2)
    assert (got.a, got.b) == ("A", "B") and got.message.startswith("A takes 1.0000x the time of B (")
    failed = compare(a, b, lambda request: _result(request, [1.0, 1.0], Verdict.WRONG_ANSWER), rounds=2)
    assert failed.message.startswith("A: wrong answer")


def test_a_comparison_needs_benchmark_mode_the_same_problem_and_sensible_rounds() -> None:
    a, b = _pair()
    with pytest.raises(ValueError, match="benchmark mode"):
        compare(a.model_copy(update={"mode": Mode.TEST}), b, lambda r: _result(r, [1.0, 1.0]))
    with pytest.raises(ValueError, match="same problem"):
        compare(a, b.model_copy(update={"benchmarks": b.benchmarks[:1]}), lambda r: _result(r, [1.0]))
    for odd in (1, 3):
        with pytest.raises(ValueError, match="rounds must be even"):
            compare(a, b, lambda r: _result(r, [1.0, 1.0]), rounds=odd)


def test_a_comparison_stops_once_the_ratio_is_known_within_half_a_percent() -> None:
    a, b = _pair()
    wobble = iter([1.0, 1.001, 0.999, 1.0005] * 50)

    def steady(request: RunRequest) -> RunResult:  # runs within ±0.1% of each other: 6 rounds settle it
        return _result(request, [1000.0 * next(wobble), 4000.0])

    runs: list[str] = []
    got = compare(a, b, lambda r: runs.append(r.submission.name) or steady(r), rounds=20)
    assert got.rounds == SETTLE_MIN_ROUNDS == 6 and len(runs) == 12
    assert got.ci_low is not None and got.ci_high is not None and got.ratio is not None
    assert got.ci_high / got.ratio <= 1 + PRECISION and got.ratio / got.ci_low <= 1 + PRECISION
    # Asked for fewer rounds than settle a comparison, or for no early stop: every round runs.
    assert compare(a, b, steady, rounds=4).rounds == 4
    assert compare(a, b, steady, rounds=10, precision=None).rounds == 10


def test_a_noisy_comparison_runs_every_round_it_may() -> None:
    a, b = _pair()
    offsets = iter([1.03, 0.97, 0.98, 1.02, 1.0] * 50)  # a fresh process's offset of ±3%: never within ±0.4%

    def noisy(request: RunRequest) -> RunResult:
        return _result(request, [1000.0 * next(offsets), 4000.0])

    got = compare(a, b, noisy, rounds=12)
    assert got.rounds == 12 and got.ci_low is not None and got.ci_low <= 1.0 <= (got.ci_high or 0)
    tally = Tally(a, b)
    for rnd, side in schedule(8):
        tally.add(rnd, side, _result((a, b)[side], [1000.0, 1000.0]))
        if side == rnd % 2:  # the first run of a round: never settled
            assert not tally.settled()
    assert tally.settled() and not tally.settled(None)
    assert round_text(3, 6) == "round 3 of 6" and round_text(3, 20) == "round 3 of at most 20"


def test_both_files_of_a_comparison_time_fresh_inputs_from_one_seed() -> None:
    a, b = _pair()
    seen: list[RunRequest] = []
    compare(a, b, lambda r: seen.append(r) or _result(r, [1.0, 1.0]), rounds=2)
    assert all(r.mode is Mode.BENCHMARK for r in seen)
    assert len({r.seed for r in seen}) == 1 and seen[0].seed is not None
    assert a.seed is None  # the caller's requests are left as they were


@pytest.mark.usefixtures("quick_timing")  # (the cache's 20 ms misses show in any sample; its runs' timing is short)
def test_a_file_that_answers_from_a_cache_gains_nothing_in_a_comparison(tmp_path: Path) -> None:
    cache = CHEATS / "cache_by_content.py"  # a miss sleeps 20 ms; the same public input every call would hit
    args = ["run", str(FIXTURES / "vectoradd"), str(cache), str(SUBMISSIONS / "correct_torch.py"), "--compare",
            "--rounds", "2", "--device", "cpu", "--json"]  # fmt: skip
    result = runner.invoke(build_app(), args)
    got = Comparison.model_validate_json(result.stdout)
    if got.verdict is Verdict.WRONG_ANSWER:  # a stale answer caught is a fine outcome too
        return
    assert got.verdict is Verdict.ACCEPTED, got.message
    assert all(c.median_a_ns >= 20e6 for c in got.cases), [c.median_a_ns for c in got.cases]


def test_a_median_of_zero_gives_no_ratio_and_says_why() -> None:
    a, b = _pair()
    def run(r: RunRequest) -> RunResult:  # A's first case takes no time
        return _result(r, [0.0, 1.0] if r.submission.name == a.submission.name else [1.0, 1.0])

    got = compare(a, b, run, rounds=2)
    assert got.verdict is Verdict.ACCEPTED and got.ratio is None and "median of 0 ns" in got.message


runner = CliRunner()
SLOW = "import time\nimport torch\n\n\ndef custom_kernel(data):\n    a, b, out = data\n    time.sleep(0.05)\n" \
       "    return torch.add(a, b, out=out)\n"  # fmt: skip


@pytest.mark.usefixtures("quick_timing")  # (50 ms a call shows in any sample; its runs' timing is short)
def test_the_cli_compares_two_files_and_tells_a_clear_difference(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW)
    args = ["run", str(FIXTURES / "vectoradd"), str(SUBMISSIONS / "correct_torch.py"), str(slow), "--compare",
            "--rounds", "2", "--device", "cpu", "--json"]  # fmt: skip
    result = runner.invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    got = Comparison.model_validate_json(result.stdout)
    assert got.verdict is Verdict.ACCEPTED and got.rounds == 2 and got.a == "correct_torch.py" and got.b == "slow.py"
    # 50 ms a call cannot hide in any noise; with 2 rounds (1 degree of freedom) the interval is wide on a busy CPU
    assert got.ratio is not None and got.ci_low is not None and got.ci_high is not None
    assert got.ratio < 0.5 and got.ci_low < got.ratio < got.ci_high
    assert all(c.median_b_ns > 50e6 and c.ci_low <= c.ratio <= c.ci_high for c in got.cases)


def test_the_cli_refuses_a_comparison_of_other_than_two_files_or_in_another_mode() -> None:
    one = runner.invoke(build_app(), ["run", str(FIXTURES / "vectoradd"), str(SUBMISSIONS / "correct_torch.py"),
                                      "--compare", "-d", "cpu"])  # fmt: skip
    assert one.exit_code == 1 and "exactly two files" in one.output
    two = [str(SUBMISSIONS / "correct_torch.py")] * 2
    mode = runner.invoke(build_app(), ["run", str(FIXTURES / "vectoradd"), *two, "--compare", "-m", "ranked",
                                       "-d", "cpu"])  # fmt: skip
    assert mode.exit_code == 1 and "drop --mode ranked" in mode.output


def test_several_files_run_in_turn_with_a_table_and_fail_if_any_fails() -> None:
    files = [str(SUBMISSIONS / "correct_torch.py"), str(SUBMISSIONS / "wrong_off_by_one.py")]
    result = runner.invoke(build_app(), ["run", str(FIXTURES / "vectoradd"), *files, "--device", "cpu"])
    assert result.exit_code == 1, result.output
    assert "2 files" in result.output and "correct_torch.py" in result.output and "wrong answer" in result.output
