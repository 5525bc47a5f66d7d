"""Standings from stored timing statistics (issue 29): each entry's score and the 95% interval of its logarithm, and a
ranking in which entries that cannot be told apart share a rank.

Pure functions of what is stored: per benchmark case, the ``TimingStats`` of each run of the entry's ranked job (the
public run and the secret-seed run). The raw per-call samples are not kept by any run (docs/measurement.md, "The
ranked score"), so these statistics are the samples a final standing is frozen with; computing from them again gives
the same floats bit for bit (``math.fsum``, fixed order, no randomness).

- **One case's figure** is what ``leaderboards.pooling`` ranks a case by: the two runs' medians pooled when they agree
  within what two evaluations of one file differ by, else the secret run's. Its variance (of the log) is what that
  figure carries: the process offset of a fresh evaluation (``runners.compare.process_offset_sd``, 0.25 µs and 0.1% in
  quadrature) and each median's standard error (``runners.compare.median_se``); pooling two readings halves it; where
  the secret run read clearly slower (its reading taken, flagged), the square of their log ratio is added; where the
  public run did, nothing is (the secret reading, the faster, stands on its own noise).
- **An entry's score** is the problem's rule over the figures (geometric mean, mean or last) and the variance of its
  log the figures' variances weighted as the rule weighs them (``runners.compare.score_weights``). Where the problem
  times its held-out cases (``holdout_timed``), their figures (one reading each, from the entry's system test) follow
  the benchmark cases' in that list.
- **Two entries are told apart** when the 95% interval of the log of their scores' ratio, ``±1.96 sqrt(va + vb)``,
  excludes 0. An entry's rank is 1 + the number of entries told apart from it and faster: entries none of which is
  clearly faster than the other share a rank (tied); and never better than the rank of the entry above it in the
  scores' order (a wide interval ties an entry at best with the one just above it, never lifts it past one).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderboards.pooling import Outcome, pool_case
from leaderboards.scoring import aggregate
from runners.compare import median_se, overall_ratio, process_offset_sd, score_weights, t975
from runners.contract import BenchmarkResult, Mode, RankingRule, RunResult, TimingStats, Verdict

Z95 = 1.959963984540054
"""The two-sided 95% quantile of the normal distribution."""


@dataclass(frozen=True)
class Entry:
    """One ranked entry as the standings see it: who, which submission, and per benchmark case the statistics of each
    run (public first, then the secret-seed run) as the run stored them (``TimingStats`` dumps)."""

    user_id: int
    user_name: str
    submission_id: int
    file_name: str
    cases: tuple[tuple[Mapping[str, Any], ...], ...]
    coverage: tuple[int, int] | None = None
    """(held-out cases passed, held-out cases run) once its system test ran, else None."""
    holdout: tuple[Mapping[str, Any], ...] = ()
    """Where the problem times its held-out cases: each one's statistics from the entry's system test (one run), in
    the cases' order. They count in the score like the benchmark cases; no surface shows them one by one."""
    rounds: tuple[Mapping[str, Any], ...] = ()
    """Where the finalists were re-timed side by side (``leaderboards/retiming.py``): each round the entry ran in, as
    ``{"round", "machine", "score_ns", "stats"}``. With them the entry ranks by its rounds (``rank``)."""

    def to_json(self) -> dict[str, Any]:
        data = {
            "user_id": self.user_id,
            "user_name": self.user_name,
            "submission_id": self.submission_id,
            "file_name": self.file_name,
            "cases": [[dict(run) for run in case] for case in self.cases],
            "coverage": list(self.coverage) if self.coverage is not None else None,
        }
        if self.holdout:  # (absent where untimed: standings frozen before it recompute from the same JSON)
            data["holdout"] = [dict(run) for run in self.holdout]
        if self.rounds:
            data["rounds"] = [dict(r) for r in self.rounds]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        coverage = data.get("coverage")
        return cls(
            user_id=int(data["user_id"]),
            user_name=str(data["user_name"]),
            submission_id=int(data["submission_id"]),
            file_name=str(data["file_name"]),
            cases=tuple(tuple(dict(run) for run in case) for case in data["cases"]),
            coverage=(int(coverage[0]), int(coverage[1])) if coverage is not None else None,
            holdout=tuple(dict(run) for run in data.get("holdout") or ()),
            rounds=tuple(dict(r) for r in data.get("rounds") or ()),
        )


@dataclass(frozen=True)
class Standing:
    rank: int
    tied: bool
    """Whether another entry shares the rank (their scores cannot be told apart)."""
    entry: Entry
    score_ns: float
    log_sd: float
    """The sd of the log of the score: the score's 95% interval is score x exp(±1.96 log_sd)."""

    @property
    def interval_ns(self) -> tuple[float, float]:
        return self.score_ns * math.exp(-Z95 * self.log_sd), self.score_ns * math.exp(Z95 * self.log_sd)


def _reading_var(stats: TimingStats) -> float:
    return process_offset_sd(stats.median_ns) ** 2 + median_se(stats) ** 2


def case_figure(index: int, runs: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """One case's figure (ns) and the variance of its log, from the case's stored statistics of one or two runs."""
    readings = [TimingStats.model_validate(run) for run in runs]
    if not readings or any(r.median_ns <= 0 for r in readings):
        raise ValueError(f"case {index + 1} has no timing to rank by")
    if len(readings) == 1:
        return readings[0].median_ns, _reading_var(readings[0])
    public, secret = readings[0], readings[-1]
    pooled = pool_case(index, public, secret)
    if pooled.outcome == Outcome.SECRET_SLOWER:
        # The secret run's reading, as the ranking takes it; but two evaluations of this file disagreed by more than
        # their noise (an outlier run, or inputs it is slower on; flagged for an admin), so how far apart they were
        # counts in its variance: without it one slow run of one case told an account apart from its own file under
        # another name.
        gap = math.log(secret.median_ns / public.median_ns)
        return pooled.ranked_ns, _reading_var(secret) + gap * gap
    if pooled.outcome == Outcome.PUBLIC_SLOWER:
        # The secret run's reading, which is the faster one: the public run's slowness is no reason to doubt it, and
        # its gap must not widen the interval (a kernel that recognises the public inputs and runs slow on them only
        # would otherwise buy a tie with whoever leads).
        return pooled.ranked_ns, _reading_var(secret)
    offset = process_offset_sd(max(public.median_ns, secret.median_ns)) ** 2
    wp, ws = 1.0 / (offset + median_se(public) ** 2), 1.0 / (offset + median_se(secret) ** 2)
    return pooled.ranked_ns, 1.0 / (wp + ws)


def entry_score(entry: Entry, rule: RankingRule) -> tuple[float, float]:
    """The entry's score (ns) under ``rule`` and the sd of its log: over its benchmark cases, then its timed held-out
    cases (where the problem times them), as one list of figures."""
    runs_per_case = [*entry.cases, *((run,) for run in entry.holdout)]
    figures = [case_figure(i, runs) for i, runs in enumerate(runs_per_case)]
    if not figures:
        raise ValueError(f"submission #{entry.submission_id} has no benchmark case to rank by")
    medians = [f for f, _ in figures]
    score = aggregate(medians, rule)  # the live ranking's own rule
    weights = score_weights(medians, rule)
    var = math.fsum(w * w * v for w, (_, v) in zip(weights, figures, strict=True))
    return score, math.sqrt(var)


def holdout_figure(entry: Entry, rule: RankingRule) -> float | None:
    """The entry's one figure over its timed held-out cases (the rule over their medians), None where untimed."""
    medians = [TimingStats.model_validate(run).median_ns for run in entry.holdout]
    return aggregate(medians, rule) if medians else None


def told_apart(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether scores ``a`` and ``b`` (score, sd of its log) differ beyond their 95% interval."""
    return abs(math.log(b[0] / a[0])) > Z95 * math.hypot(a[1], b[1])


def _round_result(stored: Mapping[str, Any]) -> RunResult:
    """A re-timed round of one entry as the compare machinery reads a run: each case's statistics and the score."""
    benches = [
        BenchmarkResult(index=i, case={}, verdict=Verdict.ACCEPTED, stats=TimingStats.model_validate(st))
        for i, st in enumerate(stored["stats"])
    ]
    return RunResult(verdict=Verdict.ACCEPTED, mode=Mode.BENCHMARK, benchmarks=benches, score_ns=stored["score_ns"])


def rounds_score(entry: Entry) -> tuple[float, float]:
    """An entry's re-timed score: the geometric mean of its rounds' scores, and the sd of its log such that
    ``rank``'s 95% interval (±1.96 sd) is the rounds' t interval (at least two rounds), at least the process offset's
    over the rounds."""
    logs = [math.log(float(r["score_ns"])) for r in entry.rounds]
    n = len(logs)
    mean = math.fsum(logs) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in logs) / (n - 1))
    # Never narrower than the fresh processes' own offset over n rounds: rounds that read alike to the last digit
    # (a red team's identical fakes; a quantised clock) are not a score known to zero width.
    floor = process_offset_sd(math.exp(mean)) / math.sqrt(n)
    return math.exp(mean), max(t975(n - 1) * sd / math.sqrt(n) / Z95, floor)


def rounds_told_apart(faster: Entry, slower: Entry, rule: RankingRule, gpu: bool) -> bool:
    """Whether ``faster`` is faster than ``slower`` beyond noise by the compare machinery: the paired ratio of their
    scores over the rounds both ran (one machine each, so its offset cancels) has a 95% interval below 1."""
    mine = {int(r["round"]): r for r in faster.rounds}
    theirs = {int(r["round"]): r for r in slower.rounds}
    shared = sorted(set(mine) & set(theirs))
    if len(shared) < 2:
        return False
    a = [_round_result(mine[i]) for i in shared]
    b = [_round_result(theirs[i]) for i in shared]
    ratio, _, high = overall_ratio(a, b, rule, gpu)
    return ratio < 1 and high < 1


def rank(entries: Iterable[Entry], rule: RankingRule, *, gpu: bool = True) -> tuple[Standing, ...]:
    """The standings of ``entries``: fastest first (equal scores: the earlier submission), each entry's rank 1 + the
    number told apart from it and faster, ``tied`` where another entry shares that rank. Where entries were re-timed
    (``Entry.rounds``, two rounds at least: the deadline's re-timing of the top K) they rank first, by their rounds,
    told apart by the paired compare (``gpu``: widened to the cases' own noise, as on a GPU); the others after them,
    each by its runs' statistics against every entry (so one that no run tells from the last re-timed entries shares
    their rank), never above the last re-timed one. The caller re-times the top K by runs
    (``competition._with_rounds`` drops stale rounds)."""
    entries = list(entries)
    retimed = [e for e in entries if len(e.rounds) >= 2]
    if not retimed:
        by_runs = _by_runs(entries, rule)
        return _standings(_monotone(_ranks(by_runs)), by_runs)
    by_rounds = _fastest_first((rounds_score(e), e) for e in retimed)
    ranks = _monotone(
        [
            1 + sum(1 for _, other in by_rounds[:i] if rounds_told_apart(other, mine, rule, gpu))
            for i, (_, mine) in enumerate(by_rounds)
        ]
    )
    # The re-timed finalists (the top K) hold the first places; the others follow in their runs' order, each ranked by
    # its runs against every entry, re-timed ones included (an entry outside the top K was slower there, and one
    # whose round failed has no re-timed score to stand on).
    head_ids = {e.submission_id for e in retimed}
    if len(head_ids) == len(entries):
        return _standings(ranks, by_rounds)
    by_runs = _by_runs(entries, rule)
    tail = [(pair, e) for pair, e in by_runs if e.submission_id not in head_ids]
    for pair, e in tail:
        faster = sum(1 for other, o in by_runs if o is not e and other[0] < pair[0] and told_apart(other, pair))
        ranks.append(max(1 + faster, ranks[-1]))
    return _standings(ranks, [*by_rounds, *tail])


Scored = tuple[tuple[float, float], Entry]
"""An entry with its score (ns) and the sd of its log."""


def _fastest_first(scored: Iterable[Scored]) -> list[Scored]:
    """Fastest first; equal scores: the earlier submission."""
    return sorted(scored, key=lambda p: (p[0][0], p[1].submission_id))


def _by_runs(entries: list[Entry], rule: RankingRule) -> list[Scored]:
    """The entries with their runs' scores (``entry_score``), fastest first."""
    return _fastest_first((entry_score(e, rule), e) for e in entries)


def _ranks(scored: list[Scored]) -> list[int]:
    """Each entry's 1 + the number of entries before it told apart from it and faster (``scored`` fastest first)."""
    return [
        1 + sum(1 for other, _ in scored[:i] if told_apart(other, mine) and other[0] < mine[0])
        for i, (mine, _) in enumerate(scored)
    ]


def _monotone(ranks: list[int]) -> list[int]:
    """Ranks in the entries' point order made never to improve down the list: an entry that cannot be told from
    the leader (a wide interval) but is slower than the entry above it shares that entry's rank at best, never a
    better one than an entry faster than it."""
    return list(itertools.accumulate(ranks, max))


def _standings(ranks: list[int], scored: list[Scored]) -> tuple[Standing, ...]:
    return tuple(
        Standing(rank=r, tied=ranks.count(r) > 1, entry=e, score_ns=score, log_sd=sd)
        for r, ((score, sd), e) in zip(ranks, scored, strict=True)
    )
