"""Scoring rules, written once: how a run's benchmark medians become one score, and how a ranking is ordered.

Pure functions over values; the database side (which runs are eligible, best per user) is in ``ranking.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from runners.contract import RankingRule, RunResult


def aggregate(medians_ns: Sequence[float], rule: RankingRule) -> float:
    """One score (ns, lower is better) from the per-benchmark medians, in benchmark order."""
    if not medians_ns:
        raise ValueError("no benchmark medians to score")
    if rule is RankingRule.LAST:
        return float(medians_ns[-1])
    if rule is RankingRule.MEAN:
        return math.fsum(medians_ns) / len(medians_ns)
    if any(m <= 0 for m in medians_ns):
        raise ValueError("a geometric mean needs positive medians")
    return math.exp(math.fsum(math.log(m) for m in medians_ns) / len(medians_ns))


def run_score(result: RunResult, rule: RankingRule) -> float | None:
    """The score of a run: None unless it passed and every benchmark case has timing statistics."""
    if not result.passed or not result.benchmarks:
        return None
    medians = [b.stats.median_ns for b in result.benchmarks if b.stats is not None and b.verdict.passed]
    if len(medians) != len(result.benchmarks):
        return None
    if not all(math.isfinite(m) and m > 0 for m in medians):
        return None  # no run takes no time: a median of 0 (or less, or infinite) is not a score to rank
    try:
        return aggregate(medians, rule)
    except ValueError:
        return None


def roofline_score(bounds_ns: Sequence[float | None], rule: RankingRule) -> float | None:
    """The score of a kernel at the roofline bound of every case (ns): the ranking rule over the bounds; None when
    there are none or one is unknown."""
    known = [b for b in bounds_ns if b is not None and b > 0]
    if not known or len(known) != len(bounds_ns):
        return None
    return aggregate(known, rule)


def ranking_key(score: float, submitted_at: datetime, submission_id: int) -> tuple[float, datetime, int]:
    """Lower is better; a tie in score goes to the earlier submission (then the lower id)."""
    return (score, submitted_at, submission_id)
