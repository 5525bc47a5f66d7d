"""Compare two submissions fairly: ordinary benchmark runs of each, interleaved on one machine (ABBA...), and the ratio
of their times with a 95% confidence interval, so a 2% gain can be told from noise.

Design: a round is one benchmark run of each file, the order alternating from round to round (A B, then B A, ...), so a
drift of the machine (clocks, temperature, a neighbour) falls on both files alike. Each run is an ordinary
``run_request`` benchmark run: fresh sandboxed processes, the same inputs (made from one secret seed the two files
share), the same harness and statistics, so nothing is shared between the two files' code. The unit of comparison is a
round: per case, the ratio of A's median to B's in that round; the estimate is the geometric mean of those ratios over
the rounds and the interval a paired t interval on their logarithms (Student's t with rounds - 1 degrees of freedom).
The overall ratio does the same with each run's score. Runs, not calls, are interleaved: a run's median already
summarises hundreds of calls, and on the lent H100 run-to-run spread is about 0.1% (docs/measurement.md).

What does move between two runs of one file is an offset each fresh process pair carries (about 2% of a 9 µs case,
0.05% of a 500 µs one, docs/measurement.md), which only more rounds average away. So ``rounds`` is the most a
comparison runs: it stops early, after an even number of at least ``SETTLE_MIN_ROUNDS`` rounds, once the overall
ratio's interval lies within ``PRECISION`` of the ratio. Stopping on the interval's width, not on whether it holds
1, does not make a difference easier to claim.

On runs timed on a GPU no interval is narrower than that offset allows (issue 28): a case's spread over the rounds
counts as at least the spread two fresh processes of one file are known to have (``process_offset_sd``, with each
median's standard error), so a few rounds in which the processes happened to agree can neither stop a comparison
early nor call a difference; the overall interval is at least the cases' floored spreads combined with the weights
the problem's rule gives the cases in the score (``score_weights``); and both hold Wilcoxon's signed-rank interval
of the same rounds (``signed_rank_interval``), so one outlier run cannot carry a mean past 1. The estimate is still
the geometric mean of the rounds' ratios (docs/measurement.md, "Comparing two kernels").
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Iterator, Sequence

from runners.contract import CaseComparison, Comparison, Mode, RankingRule, RunRequest, RunResult, TimingStats, Verdict

MIN_ROUNDS = 2
MAX_ROUNDS = 50
DEFAULT_ROUNDS = 20
"""The most rounds a comparison runs by default. Even: each file runs first as often as second (A B, B A, ...), so an
order effect cancels."""
CPU_ROUNDS = 6
"""The default on the CPU (``kernelcup run --compare --device cpu``): a shared CPU's noise seldom lets a comparison
settle, and its timings are for trying things out, so it runs the fewest rounds that can stop early."""
SETTLE_MIN_ROUNDS = 6
"""Rounds before a comparison may stop early: fewer say too little about the spread (the t interval is wide)."""
PRECISION = 0.004
"""A comparison stops once its overall interval lies within ±0.4% of its ratio. A case of a few µs keeps a GPU
comparison from that to the last round (its process offset alone is 2-3% a run: vectoradd's 8 µs case leaves the
overall interval above ±0.5% at 20 rounds); a problem whose cases are all large stops at the 6th
(docs/measurement.md)."""

OFFSET_NS = 250.0
"""The sd of the offset a fresh process pair's median of a GPU case carries, in absolute terms: about 0.25 µs whatever
the case's size (lent H100: sd 1.9-2.2% of vectoradd's 9 µs case, 0.2% of its 127 µs case, 0.05-0.07% of 520 µs;
lent H200, 16 evaluations of its Triton solution: 243 ns of 7.4 µs, 235 ns of 102 µs, 466 ns of 415 µs; issue 28: an
8 µs case read 7.6-8.1 µs across evaluations). Only more evaluations average it away."""
OFFSET_REL = 0.001
"""And a relative part, so a large case's interval never claims more than about 0.1% per evaluation (the H200's
415 µs case: 0.11%)."""

# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom; beyond the table, linear in 1/df.
_T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
    11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
    25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980,
}  # fmt: skip
_Z975 = 1.960


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (tabled; interpolated in 1/df between)."""
    if df < 1:
        raise ValueError("a t interval needs at least one degree of freedom")
    if df in _T975:
        return _T975[df]
    keys = sorted(_T975)
    below = max(k for k in keys if k < df)
    above = min((k for k in keys if k > df), default=None)
    lo_x, lo_t = 1 / below, _T975[below]
    hi_x, hi_t = (1 / above, _T975[above]) if above else (0.0, _Z975)
    x = 1 / df
    return hi_t + (lo_t - hi_t) * (x - hi_x) / (lo_x - hi_x)


def process_offset_sd(median_ns: float) -> float:
    """The relative sd of the offset one fresh process pair's median of a GPU case of about ``median_ns`` carries
    (``OFFSET_NS``, ``OFFSET_REL``): 3.1% of an 8 µs case, 0.22% of 127 µs, 0.11% of 520 µs."""
    return math.hypot(OFFSET_NS / median_ns, OFFSET_REL)


def _log_ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    if len(a) != len(b) or len(a) < MIN_ROUNDS:
        raise ValueError(f"a paired ratio needs the same number of rounds for both, at least {MIN_ROUNDS}")
    if any(not (x > 0 and math.isfinite(x)) for x in (*a, *b)):
        raise ValueError("times must be positive and finite")
    return [math.log(x / y) for x, y in zip(a, b, strict=True)]


def _spread(logs: Sequence[float]) -> tuple[float, float]:
    """(mean, sample sd) of the rounds' log ratios."""
    n = len(logs)
    mean = math.fsum(logs) / n
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in logs) / (n - 1))


def _interval(mean: float, sd: float, n: int, logs: Sequence[float] = ()) -> tuple[float, float, float]:
    """(ratio, low, high) from the rounds' mean log ratio and sd (a t interval); with ``logs``, widened to hold the
    rank-based interval of those rounds too (``signed_rank_interval``), so one outlier run cannot carry the mean
    past 1 on its own."""
    half = t975(n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if logs:
        rank_low, rank_high = signed_rank_interval(logs)
        low, high = min(low, rank_low), max(high, rank_high)
    return math.exp(mean), math.exp(low), math.exp(high)


def signed_rank_interval(logs: Sequence[float]) -> tuple[float, float]:
    """The 95% interval of the centre of the rounds' log ratios from Wilcoxon's signed-rank test (Hodges-Lehmann's:
    order statistics of the Walsh averages (d_i + d_j) / 2, i <= j, the cut from the test's exact null distribution).
    It assumes only a symmetric spread, so an outlier run (a skewed, heavy tail) moves it by one rank, not by its
    size. With 5 rounds or fewer no interval reaches 95%: it is then the whole range of the Walsh averages."""
    n = len(logs)
    walsh = sorted((logs[i] + logs[j]) / 2 for i in range(n) for j in range(i, n))
    total = n * (n + 1) // 2
    counts = [1] + [0] * total  # the number of sign patterns whose positive ranks sum to each value
    for rank in range(1, n + 1):
        for s in range(total, rank - 1, -1):
            counts[s] += counts[s - rank]
    patterns, below, k = 2**n, 0, 0
    while below + counts[k] <= 0.025 * patterns:  # the largest k with P(T < k) <= 2.5%
        below += counts[k]
        k += 1
    k = max(k, 1)
    return walsh[k - 1], walsh[len(walsh) - k]


def paired_ratio(a: Sequence[float], b: Sequence[float], *, floor_sd: float = 0.0) -> tuple[float, float, float]:
    """(ratio, low, high): the geometric mean of a_i / b_i and its 95% paired t interval (all positive). The sd of
    the rounds' log ratios counts as at least ``floor_sd`` (what two fresh processes of one file differ by)."""
    logs = _log_ratios(a, b)
    mean, sd = _spread(logs)
    return _interval(mean, max(sd, floor_sd), len(a), logs if floor_sd > 0 else ())


def score_weights(medians_ns: Sequence[float], rule: RankingRule) -> list[float]:
    """How much a relative change of each case's median moves the score, relatively (d log score / d log median):
    1/k each under the geometric mean, the case's share of the sum under the mean, all on the last case under 'last'."""
    k = len(medians_ns)
    if rule is RankingRule.LAST:
        return [0.0] * (k - 1) + [1.0]
    if rule is RankingRule.MEAN:
        total = math.fsum(medians_ns)
        return [m / total for m in medians_ns]
    return [1.0 / k] * k


def median_se(stats: TimingStats) -> float:
    """The relative standard error of a run's median from what the run keeps (the raw samples are not kept): 0.93 x
    the interquartile range / sqrt(n) (1.2533 sigma / sqrt(n) with sigma = IQR / 1.349, robust to the slow tail), or
    1.2533 x the sd / sqrt(n) for results stored before the quartiles were."""
    if stats.median_ns <= 0 or stats.samples < 1:
        return 0.0
    if stats.p25_ns is not None and stats.p75_ns is not None:
        spread = 0.9291 * (stats.p75_ns - stats.p25_ns)
    else:
        spread = 1.2533 * stats.std_ns
    return spread / (stats.median_ns * math.sqrt(stats.samples))


def _round_floors(ra: Sequence[RunResult], rb: Sequence[RunResult]) -> list[float]:
    """Per case, the least sd of a round's log ratio on a GPU: two fresh processes' offsets (``process_offset_sd``
    of the case's median) and the two medians' own standard errors (``median_se``, the median over the runs)."""
    floors = []
    for i in range(len(ra[0].benchmarks)):
        stats = [r.benchmarks[i].stats for r in (*ra, *rb)]
        medians = [s.median_ns for s in stats if s is not None]
        se = _median([median_se(s) for s in stats if s is not None])
        floors.append(math.sqrt(2.0) * math.hypot(process_offset_sd(_median(medians)), se))
    return floors


def overall_ratio(ra: Sequence[RunResult], rb: Sequence[RunResult], rule: RankingRule,
                  gpu: bool) -> tuple[float, float, float]:  # fmt: skip
    """The ratio of the runs' scores, A over B, with its 95% interval: the paired t interval of the rounds' score
    ratios, widened on a GPU to at least the cases' own intervals (each at least the process offset) combined with the
    weights the rule gives the cases in the score, as if the cases' errors were independent."""
    scores = _log_ratios([r.score_ns or 0.0 for r in ra], [r.score_ns or 0.0 for r in rb])
    mean, sd = _spread(scores)
    if gpu:
        medians = [_median([r.benchmarks[i].stats.median_ns for r in (*ra, *rb)])  # type: ignore[union-attr]
                   for i in range(len(ra[0].benchmarks))]  # fmt: skip
        combined = 0.0
        weights, floors = score_weights(medians, rule), _round_floors(ra, rb)
        for i, (w, floor) in enumerate(zip(weights, floors, strict=True)):
            ma = [r.benchmarks[i].stats.median_ns for r in ra]  # type: ignore[union-attr]
            mb = [r.benchmarks[i].stats.median_ns for r in rb]  # type: ignore[union-attr]
            combined += (w * max(_spread(_log_ratios(ma, mb))[1], floor)) ** 2
        sd = max(sd, math.sqrt(combined))
    return _interval(mean, sd, len(ra), scores if gpu else ())


Run = Callable[[RunRequest], RunResult]


def check_pair(a: RunRequest, b: RunRequest, rounds: int, *, max_rounds: int = MAX_ROUNDS) -> None:
    """Raise ``ValueError`` unless ``a`` and ``b`` can be compared in ``rounds`` rounds (even, within the bounds;
    benchmark mode; the same problem, cases and device)."""
    if not MIN_ROUNDS <= rounds <= max_rounds or rounds % 2:
        raise ValueError(f"rounds must be even, from {MIN_ROUNDS} to {max_rounds} (each file first as often as "
                         f"second), not {rounds}")  # fmt: skip
    for r in (a, b):
        if r.mode is not Mode.BENCHMARK:
            raise ValueError(f"a comparison runs benchmark mode; {r.submission.name} asks for {r.mode.value}")
    if a.problem != b.problem or a.files != b.files or a.benchmarks != b.benchmarks or a.device != b.device:
        raise ValueError("both files must be compared on the same problem, cases and device")


def round_text(rnd: int, rounds: int) -> str:
    """"round 3 of 6", or "round 3 of at most 20" where the comparison may stop early."""
    most = "at most " if rounds > SETTLE_MIN_ROUNDS else ""
    return f"round {rnd} of {most}{rounds}"


def schedule(rounds: int) -> Iterator[tuple[int, int]]:
    """(round, side) in run order: side 0 is A, 1 is B; A first in even rounds, B first in odd ones."""
    for rnd in range(rounds):
        for side in (0, 1) if rnd % 2 == 0 else (1, 0):
            yield rnd, side


def side_names(a: str, b: str) -> tuple[str, str]:
    """The two files as a comparison names them: by their names, or "A" and "B" where the names are the same (a file
    compared with itself, or two files of one name from two folders: "pytorch.py takes 1.0075x the time of
    pytorch.py" said nothing)."""
    return (a, b) if a != b else ("A", "B")


class Tally:
    """The runs of a comparison as they finish; ``add`` answers the comparison when a run failed (it ends there),
    ``result`` the comparison of all the rounds."""

    def __init__(self, a: RunRequest, b: RunRequest) -> None:
        self.names = side_names(a.submission.name, b.submission.name)
        # Every timed call on inputs of its own, the same for both files (one secret seed): a file that answered
        # from a cache of the public inputs would otherwise win (red team, 2026-11-24: "83% faster" for no work).
        seed = secrets.randbelow(2**63)
        self.requests = tuple(r.model_copy(update={"seed": seed}) for r in (a, b))
        self.results: tuple[list[RunResult], list[RunResult]] = ([], [])
        self.rule = a.ranking_by

    def add(self, rnd: int, side: int, result: RunResult) -> Comparison | None:
        if not result.passed:
            return Comparison(
                a=self.names[0], b=self.names[1], rounds=rnd, verdict=result.verdict,
                message=f"{self.names[side]}: {result.verdict.label}: {result.message}",
            )  # fmt: skip
        self.results[side].append(result)
        return None

    def result(self) -> Comparison:
        return _summarise(self.names, self.results[0], self.results[1], self.rule)

    def settled(self, precision: float | None = PRECISION) -> bool:
        """Whether the rounds so far say enough: an even number of at least ``SETTLE_MIN_ROUNDS`` complete rounds
        whose overall ratio's 95% interval lies within ``precision`` of it (None: never, run every round)."""
        ra, rb = self.results
        n = len(ra)
        if precision is None or n != len(rb) or n < SETTLE_MIN_ROUNDS or n % 2:
            return False
        if _zero(ra, rb):  # a score or median of 0: no ratio, so nothing to settle on
            return False
        ratio, low, high = overall_ratio(ra, rb, self.rule, on_gpu(ra, rb))
        return high / ratio <= 1 + precision and ratio / low <= 1 + precision


def compare(a: RunRequest, b: RunRequest, run: Run, *, rounds: int = DEFAULT_ROUNDS,
            precision: float | None = PRECISION,
            on_round: Callable[[int, int], None] | None = None) -> Comparison:  # fmt: skip
    """Interleave up to ``rounds`` benchmark runs of each request (``run`` runs one) and compare them, stopping
    early once the rounds have settled the ratio to ``precision`` (:meth:`Tally.settled`; None: run them all).
    Stops at the first run that is not accepted: its verdict and message, naming the file, are the comparison's."""
    check_pair(a, b, rounds)
    tally = Tally(a, b)
    for rnd, side in schedule(rounds):
        failed = tally.add(rnd, side, run(tally.requests[side]))
        if failed is not None:
            return failed
        if len(tally.results[0]) == len(tally.results[1]) == rnd + 1:
            if on_round is not None:
                on_round(rnd + 1, rounds)
            if tally.settled(precision):
                break
    return tally.result()


def _zero(ra: Sequence[RunResult], rb: Sequence[RunResult]) -> bool:
    """Whether a run has a median or a score of 0 (or none), so that no ratio can be formed."""
    times = [b.stats.median_ns if b.stats else 0.0 for r in (*ra, *rb) for b in r.benchmarks]
    return any(not (t > 0) for t in times) or any(not r.score_ns for r in (*ra, *rb))


def on_gpu(ra: Sequence[RunResult], rb: Sequence[RunResult]) -> bool:
    """Whether every run was timed on a GPU (its system names one): the process offset was measured there; a CPU's
    own spread is far larger and a fake runner's numbers are no device's."""
    return all(r.system.gpu_name for r in (*ra, *rb))


def _summarise(names: tuple[str, str], ra: list[RunResult], rb: list[RunResult], rule: RankingRule) -> Comparison:
    gpu = on_gpu(ra, rb)
    if _zero(ra, rb):
        message = "a run has a median of 0 ns (too little work to time), so no ratio can be formed"
        return Comparison(a=names[0], b=names[1], rounds=len(ra), verdict=Verdict.ACCEPTED, message=message)
    cases = []
    floors = _round_floors(ra, rb) if gpu else [0.0] * len(ra[0].benchmarks)
    for i, bench in enumerate(ra[0].benchmarks):
        ma = [r.benchmarks[i].stats.median_ns for r in ra]  # type: ignore[union-attr]
        mb = [r.benchmarks[i].stats.median_ns for r in rb]  # type: ignore[union-attr]
        ratio, low, high = paired_ratio(ma, mb, floor_sd=floors[i])
        cases.append(CaseComparison(index=i, case=bench.case, median_a_ns=_median(ma), median_b_ns=_median(mb),
                                    ratio=ratio, ci_low=low, ci_high=high))  # fmt: skip
    ratio, low, high = overall_ratio(ra, rb, rule, gpu)
    return Comparison(a=names[0], b=names[1], rounds=len(ra), verdict=Verdict.ACCEPTED, message=_verdict_text(
        names, ratio, low, high), cases=cases, ratio=ratio, ci_low=low, ci_high=high)  # fmt: skip


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _verdict_text(names: tuple[str, str], ratio: float, low: float, high: float) -> str:
    a, b = names
    interval = f"95% interval {low:.4f} to {high:.4f}"
    if low <= 1.0 <= high:
        return f"{a} takes {ratio:.4f}x the time of {b} ({interval}): no difference can be told from the noise"
    faster, by = (a, 1 - ratio) if ratio < 1 else (b, 1 - 1 / ratio)
    return f"{a} takes {ratio:.4f}x the time of {b} ({interval}): {faster} is faster by {by:.1%}"
