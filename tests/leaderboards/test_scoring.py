"""The scoring rules as pure functions: how benchmark medians become a score."""

from __future__ import annotations

import math

import pytest
from helpers import run_result

from leaderboards.scoring import aggregate, run_score
from runners.contract import RankingRule, Verdict


def test_last_mean_and_geometric_mean_of_the_medians() -> None:
    medians = [1.0, 4.0, 16.0]
    assert aggregate(medians, RankingRule.LAST) == 16.0
    assert aggregate(medians, RankingRule.MEAN) == pytest.approx(7.0)
    assert aggregate(medians, RankingRule.GEOMEAN) == pytest.approx(4.0)


def test_the_rules_can_disagree_about_who_is_faster() -> None:
    spiky, even = [1.0, 400.0], [30.0, 30.0]
    assert aggregate(spiky, RankingRule.GEOMEAN) < aggregate(even, RankingRule.GEOMEAN)
    assert aggregate(spiky, RankingRule.MEAN) > aggregate(even, RankingRule.MEAN)
    assert aggregate(spiky, RankingRule.LAST) > aggregate(even, RankingRule.LAST)


def test_geometric_mean_refuses_non_positive_medians_and_empty_input() -> None:
    with pytest.raises(ValueError):
        aggregate([0.0, 5.0], RankingRule.GEOMEAN)
    with pytest.raises(ValueError):
        aggregate([], RankingRule.MEAN)


def test_geometric_mean_of_many_large_medians_does_not_overflow() -> None:
    assert math.isfinite(aggregate([1e12] * 200, RankingRule.GEOMEAN))


def test_a_run_has_a_score_only_when_it_passed_with_every_benchmark_timed() -> None:
    assert run_score(run_result([100.0, 400.0]), RankingRule.GEOMEAN) == pytest.approx(200.0)
    assert run_score(run_result([100.0], verdict=Verdict.WRONG_ANSWER), RankingRule.MEAN) is None
    partial = run_result([100.0, 400.0])
    partial.benchmarks[1].stats = None
    assert run_score(partial, RankingRule.MEAN) is None
    assert run_score(run_result([]), RankingRule.MEAN) is None
    # A median of 0 ns (the timer clamps samples at 0) would rank first under mean or last (red team, 2026-11-25).
    for rule in RankingRule:
        assert run_score(run_result([0.0, 400.0]), rule) is None
        assert run_score(run_result([float("inf"), 400.0]), rule) is None
