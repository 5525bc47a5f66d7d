"""The statistics of a compare under realistic GPU timing noise (issue 28): identical files hold 1 at every case size
and overall, a 3% difference is called, and no interval is narrower than the offset a fresh process pair carries.

Each simulated compare runs ``runners.compare.compare`` itself, with its default rounds and stopping rule, over fake
runs whose per-case statistics come from ``tests/timing_noise.py`` (samples drawn per call, a clustered per-process
offset, outlier runs)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest
from harness_helpers import SUBMISSIONS, build_request
from timing_noise import OUTLIERS, QUIET, Noise, run_result

from runners.compare import DEFAULT_ROUNDS, SETTLE_MIN_ROUNDS, compare, process_offset_sd
from runners.contract import Comparison, Mode, RankingRule, RunRequest, RunResult, SubmissionFile

SIZES_NS = (3_000.0, 8_000.0, 30_000.0, 200_000.0, 500_000.0)
"""The case sizes of the harness-accuracy benchmark: 3, 8, 30, 200 and 500 µs."""
TRIALS = 100
COVER_TRIALS = 300
"""Compares of identical files per noise model: enough that 95% coverage is told from 93% (sd of the count ~3)."""


def _gpu_pair(rule: RankingRule = RankingRule.GEOMEAN, k: int = len(SIZES_NS)) -> tuple[RunRequest, RunRequest]:
    a = build_request(SUBMISSIONS / "correct_torch.py", Mode.BENCHMARK, device="cuda")
    cases = [{"size": i} for i in range(k)]
    a = a.model_copy(update={"benchmarks": cases, "ranking_by": rule})
    b = a.model_copy(update={"submission": SubmissionFile(name="b.py", content=a.submission.content)})
    return a, b


def _simulate(seed: int, true_a: Sequence[float], true_b: Sequence[float], noise: Noise) -> Comparison:
    rng = random.Random(seed)
    a, b = _gpu_pair(k=len(true_a))

    def run(request: RunRequest) -> RunResult:
        true = true_a if request.submission.name == a.submission.name else true_b
        return run_result(rng, true, noise, cases=request.benchmarks)

    got = compare(a, b, run, rounds=DEFAULT_ROUNDS)
    assert got.ratio is not None and len(got.cases) == len(true_a), got.message
    return got


@pytest.mark.parametrize("noise", [QUIET, OUTLIERS], ids=["offsets", "offsets-and-outlier-runs"])
def test_identical_files_hold_one_at_every_case_size_and_overall(noise: Noise) -> None:
    """Issue 28: two identical Triton files were called 0.9% apart (0.9867-0.9946), an 8 µs case carrying a 2.7%
    offset. Here 300 compares of identical files: every case's interval and the overall one hold 1 in at least 19
    of 20 (285 of 300)."""
    held_case = [0] * len(SIZES_NS)
    held_overall = 0
    for trial in range(COVER_TRIALS):
        got = _simulate(1000 + trial, SIZES_NS, SIZES_NS, noise)
        for i, c in enumerate(got.cases):
            held_case[i] += c.ci_low <= 1.0 <= c.ci_high
        assert got.ci_low is not None and got.ci_high is not None
        held_overall += got.ci_low <= 1.0 <= got.ci_high
        if not got.ci_low <= 1.0 <= got.ci_high:
            assert "faster by" in got.message
        else:
            assert "no difference can be told from the noise" in got.message
    need = math.ceil(COVER_TRIALS * 19 / 20)
    assert min(held_case) >= need and held_overall >= need, (held_case, held_overall)


def test_a_three_percent_difference_on_the_large_cases_is_called() -> None:
    """A is 3% faster on the 30, 200 and 500 µs cases and the same on the 3 and 8 µs ones: the three large cases'
    intervals lie below 1 in at least 19 of 20 compares and the small ones seldom say anything. On vectoradd's three
    cases (8, 127, 520 µs), 3% faster on the two large ones, the overall ratio (0.98) is called too."""
    faster = [t * (0.97 if t >= 30_000 else 1.0) for t in SIZES_NS]
    called_case = [0] * len(SIZES_NS)
    for trial in range(TRIALS):
        got = _simulate(5000 + trial, faster, SIZES_NS, OUTLIERS)
        for i, c in enumerate(got.cases):
            called_case[i] += c.ci_high < 1.0 or c.ci_low > 1.0
    need = math.ceil(TRIALS * 19 / 20)
    assert min(called_case[2:]) >= need and max(called_case[:2]) <= TRIALS - need, called_case
    vectoradd = (8_000.0, 127_000.0, 520_000.0)
    called = 0
    for trial in range(TRIALS):
        got = _simulate(7000 + trial, [8_000.0, 127_000.0 * 0.97, 520_000.0 * 0.97], vectoradd, OUTLIERS)
        called += (got.ci_high or 2.0) < 1.0
        assert got.ratio is not None and abs(got.ratio - 0.97 ** (2 / 3)) < 0.015
    assert called >= need, called


def test_a_lucky_streak_of_rounds_does_not_narrow_a_small_case_below_the_process_offset() -> None:
    """The issue's compare stopped with an interval exactly ±0.4% wide: a few rounds in which the 8 µs case's two
    processes happened to agree made its spread look small. A GPU compare's interval per round is never narrower
    than two fresh processes of one file differ by, so such a compare runs on and its interval stays honest."""
    a, b = _gpu_pair()
    a = a.model_copy(update={"benchmarks": a.benchmarks[1:2]})
    b = b.model_copy(update={"benchmarks": b.benchmarks[1:2]})

    def run(request: RunRequest) -> RunResult:  # A's processes all read 1.4% low: the rounds' spread is 0
        exact = Noise(cluster_ns=0.0, offset_ns=0.0, offset_rel=0.0, sample_sigma=0.0, sample_ns=0.0, spike_p=0.0)
        low = 0.986 if request.submission.name == a.submission.name else 1.0
        return run_result(random.Random(0), [8_000.0 * low], exact)

    got = compare(a, b, run, rounds=DEFAULT_ROUNDS)
    assert got.rounds == DEFAULT_ROUNDS > SETTLE_MIN_ROUNDS
    case = got.cases[0]
    assert case.ratio == pytest.approx(0.986, abs=1e-4)
    floor = math.sqrt(2) * process_offset_sd(8_000.0) / math.sqrt(DEFAULT_ROUNDS)
    assert math.log(case.ci_high / case.ratio) >= 2.0 * floor and case.ci_low <= 1.0 <= case.ci_high
    assert got.ci_low is not None and got.ci_high is not None and got.ci_low <= 1.0 <= got.ci_high


def test_the_process_offset_is_the_measured_one() -> None:
    """docs/measurement.md: what fresh evaluations of one file spread by on the lent H100 and H200, about 0.25 µs
    whatever the size: 3.1% of an 8 µs case, 0.2-0.25% of 127 µs, about 0.1% of 500 µs; it never vanishes."""
    assert process_offset_sd(8_000.0) == pytest.approx(0.031, rel=0.05)
    assert 0.002 < process_offset_sd(127_000.0) < 0.0025
    assert 0.001 < process_offset_sd(500_000.0) < 0.0012
    assert process_offset_sd(1e9) == pytest.approx(0.001, rel=0.01)


def test_the_overall_interval_weighs_the_cases_as_the_score_does() -> None:
    """Under the 'last' rule only the last case makes the score: its offset, not the 3 µs case's, sets the width."""
    rng = random.Random(7)
    for rule, wide in ((RankingRule.GEOMEAN, True), (RankingRule.LAST, False)):
        a, b = _gpu_pair(rule)

        def run(request: RunRequest, rule: RankingRule = rule) -> RunResult:
            got = run_result(rng, SIZES_NS, QUIET, cases=request.benchmarks)
            last = got.benchmarks[-1].stats
            assert last is not None
            return got.model_copy(update={"score_ns": last.median_ns}) if rule is RankingRule.LAST else got

        got = compare(a, b, run, rounds=8, precision=None)
        assert got.ci_low is not None and got.ci_high is not None
        width = math.log(got.ci_high / got.ci_low)
        assert (width > 0.01) is wide, (rule, width)
