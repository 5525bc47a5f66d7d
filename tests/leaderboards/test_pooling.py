"""The ranked score from both runs of a ranked job (``leaderboards.pooling``, issue 28): pooled case by case where
the public and the secret-seed run agree within what two runs of one file differ by, the secret run's time where they
clearly do not (flagged when the secret is slower), with simulations of two accounts submitting one file."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from helpers import future, make_problem
from sqlalchemy import select
from timing_noise import OUTLIERS, QUIET, Noise, run_result

from leaderboards import ranking
from leaderboards.models import Leaderboard
from leaderboards.pooling import Outcome, RankedScore, pool_case, ranked_score
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from runners.contract import BenchmarkResult, Mode, RankingRule, RunResult, TimingStats, Verdict

VECTORADD_NS = (8_000.0, 127_000.0, 520_000.0)
LARGE_NS = (30_000.0, 200_000.0, 500_000.0)


def _stats(median: float, iqr: float = 0.01, n: int = 200, quartiles: bool = True) -> TimingStats:
    return TimingStats(
        samples=n, median_ns=median, mean_ns=median, std_ns=median * iqr / 1.349, stderr_ns=0.0,
        min_ns=median * 0.98, max_ns=median * 1.5,
        p25_ns=median * (1 - iqr / 2) if quartiles else None, p75_ns=median * (1 + iqr / 2) if quartiles else None,
    )  # fmt: skip


def _result(medians: Sequence[float], quartiles: bool = True) -> RunResult:
    benches = [
        BenchmarkResult(index=i, case={"size": i}, verdict=Verdict.ACCEPTED, stats=_stats(m, quartiles=quartiles))
        for i, m in enumerate(medians)
    ]
    score = math.exp(math.fsum(math.log(m) for m in medians) / len(medians))
    return RunResult(verdict=Verdict.ACCEPTED, mode=Mode.RANKED, benchmarks=benches, score_ns=score)


def _pair(public: Sequence[float], secret: Sequence[float], quartiles: bool = True) -> RankedScore:
    got = ranked_score(_result(public, quartiles), _result(secret, quartiles), RankingRule.GEOMEAN)
    assert got is not None
    return got


def test_two_runs_that_agree_are_pooled_not_maxed() -> None:
    """An 8 µs case read 7.9 and 8.1 µs (within the 0.2 µs two processes differ by): it counts at about 8.0, not 8.1."""
    got = _pair([7_900.0, 127_000.0], [8_100.0, 127_100.0])
    assert [c.outcome for c in got.cases] == [Outcome.POOLED, Outcome.POOLED]
    assert got.cases[0].ranked_ns == pytest.approx(math.sqrt(7_900.0 * 8_100.0), rel=1e-3)
    assert got.score_ns < math.sqrt(8_100.0 * 127_100.0) and not got.flagged and got.note is None


def test_a_clearly_slower_secret_case_counts_at_its_secret_time_and_is_flagged() -> None:
    """Issue 28's secret run: the 8 µs case at 9.78 µs against 7.9 µs. That may be a kernel faster on the public inputs
    than on fresh ones, so it is not hidden: the case counts at 9.78 µs, the author is told, an admin may look."""
    got = _pair([7_900.0, 127_000.0, 520_000.0], [9_780.0, 127_000.0, 520_100.0])
    assert [c.outcome for c in got.cases] == [Outcome.SECRET_SLOWER, Outcome.POOLED, Outcome.POOLED]
    assert got.cases[0].ranked_ns == 9_780.0 and got.flagged
    assert got.note is not None and got.note.startswith("case 1 (size=0) ran 23.8% slower on the secret-seed inputs")
    assert got.note.endswith("flagged for an admin to look at")
    cheat = _pair([1.0, 1.0], [400.0, 400.0])  # precomputed the public answers
    assert cheat.score_ns == pytest.approx(400.0) and cheat.flagged
    small = _pair([500_000.0], [505_000.0])  # 1% of a 500 µs case: over 6 sds of what two runs differ by
    assert small.flagged and small.score_ns == pytest.approx(505_000.0)


def test_a_slow_public_run_counts_at_the_secret_runs_time_unflagged() -> None:
    """An outlier public reading: the secret inputs could not be prepared for, so the secret time counts; nothing to
    flag (being slower on the public inputs gains nothing)."""
    got = _pair([9_780.0, 127_000.0], [7_900.0, 127_000.0])
    assert got.cases[0].outcome == Outcome.PUBLIC_SLOWER and got.cases[0].ranked_ns == 7_900.0
    assert not got.flagged and got.note is not None and "slower in the public run" in got.note


def test_results_stored_before_the_quartiles_pool_from_their_sd() -> None:
    got = _pair([7_900.0, 127_000.0], [8_100.0, 127_100.0], quartiles=False)
    assert not got.flagged and all(c.outcome == Outcome.POOLED for c in got.cases)
    assert pool_case(0, _stats(8_000.0, quartiles=False), _stats(9_780.0, quartiles=False)).outcome == (
        Outcome.SECRET_SLOWER
    )


def test_runs_whose_cases_do_not_line_up_rank_by_the_slower_score() -> None:
    got = ranked_score(_result([100.0, 200.0]), _result([100.0]), RankingRule.GEOMEAN)
    assert got is not None and got.score_ns == pytest.approx(math.sqrt(100.0 * 200.0)) and got.note
    assert ranked_score(_result([100.0]), _result([100.0]).model_copy(update={"verdict": Verdict.WRONG_ANSWER}),
                        RankingRule.GEOMEAN) is None  # fmt: skip


def _accounts(rng: random.Random, true: Sequence[float], noise: Noise) -> tuple[tuple[float, float], ...]:
    """Two accounts submit one file: each gets a public and a secret run; (pooled, slower run's) score of each."""
    out = []
    for _ in range(2):
        public, secret = (run_result(rng, true, noise, Mode.RANKED) for _ in range(2))
        pooled = ranked_score(public, secret, RankingRule.GEOMEAN)
        assert pooled is not None and public.score_ns and secret.score_ns
        out.append((pooled.score_ns, max(public.score_ns, secret.score_ns)))
    return tuple(out)


def _within(trials: Sequence[tuple[tuple[float, float], ...]], which: int, tolerance: float = 0.01) -> int:
    return sum(abs(t[0][which] / t[1][which] - 1) <= tolerance for t in trials)


def test_two_accounts_with_one_file_rank_within_one_percent_when_the_cases_are_30_us_or_more() -> None:
    """Issue 28's target, at the noise of the lent H100 with one outlier run in 50: two accounts' ranked scores of one
    file (30, 200 and 500 µs cases) agree within 1% in at least 19 of 20 trials (400 trials; the slower-run score
    does worse on the same draws)."""
    rng = random.Random(28)
    trials = [_accounts(rng, LARGE_NS, OUTLIERS) for _ in range(400)]
    pooled, slower = _within(trials, 0), _within(trials, 1)
    assert pooled >= 380 and pooled > slower, (pooled, slower)


def test_pooling_removes_the_maximums_bias_and_narrows_the_spread() -> None:
    """vectoradd's cases (8, 127, 520 µs), the 8 µs one moving about 2% between two processes: the slower run's score
    sits +0.45% above the truth on average and two accounts' scores agree within 1% about 3 times in 4; pooled, the
    bias is gone and they agree more often. (At that offset, not 19 times in 20: see docs/measurement.md.)"""
    rng = random.Random(8)
    truth = math.exp(math.fsum(math.log(t) for t in VECTORADD_NS) / 3)
    trials = [_accounts(rng, VECTORADD_NS, QUIET) for _ in range(400)]
    logs = {which: [math.log(t[k][which] / truth) for t in trials for k in (0, 1)] for which in (0, 1)}
    mean = {w: math.fsum(v) / len(v) for w, v in logs.items()}
    sd = {w: math.sqrt(math.fsum((x - mean[w]) ** 2 for x in v) / (len(v) - 1)) for w, v in logs.items()}
    assert abs(mean[0]) < 0.001 < 0.003 < mean[1], mean
    assert sd[0] < sd[1], sd
    assert _within(trials, 0) > _within(trials, 1)


CODE = b"def custom_kernel(data):\n    return data\n"


@pytest.fixture
def board(service: LeaderboardService, tmp_path: Path) -> str:
    service.create_leaderboard(make_problem(tmp_path), deadline=future(), devices=["cpu"])
    return "add"


def _submit(service: LeaderboardService, user: str, public: Sequence[float], secret: Sequence[float]) -> int:
    receipt = service.submit(UserRef(user), "s.py", CODE + f"# {user}\n".encode(), "add", ["cpu"], Mode.RANKED)
    job = receipt.jobs[0].job_id
    service.record_run(job, _result(public))
    service.record_run(job, _result(secret), secret=True)
    return receipt.submission_id


def test_the_service_ranks_by_the_pooled_score_and_tells_the_author_why_a_case_did_not_pool(
    service: LeaderboardService, board: str
) -> None:
    pooled = _submit(service, "ann", [10_000.0, 200_000.0], [10_100.0, 199_950.0])
    flagged = _submit(service, "ben", [10_000.0, 200_000.0], [13_000.0, 200_000.0])
    entries = {e.user_name: e for e in service.ranking(board, "cpu").entries}
    expected = math.sqrt(math.sqrt(10_000.0 * 10_100.0) * math.sqrt(200_000.0 * 199_950.0))
    assert entries["ann"].score_ns == pytest.approx(expected, rel=1e-4)
    assert entries["ben"].score_ns == pytest.approx(math.sqrt(13_000.0 * 200_000.0), rel=1e-6)
    ann = service.submission_status(pooled).jobs[0]
    assert ann.ranked_score_ns == pytest.approx(expected, rel=1e-4) and not ann.ranked_flagged and not ann.ranked_note
    ben = service.submission_status(flagged).jobs[0]
    assert ben.ranked_flagged and ben.ranked_note is not None and "30.0% slower on the secret-seed" in ben.ranked_note
    with service.db.transaction() as s:  # the ranking computed from the runs agrees with the kept one
        lb = s.scalar(select(Leaderboard).where(Leaderboard.name == board))
        assert lb is not None
        bests = {e.submission_id: e.score for e in ranking.eligible_bests(s, lb)}
    assert bests[pooled] == pytest.approx(expected, rel=1e-4) and set(bests) == {pooled, flagged}
