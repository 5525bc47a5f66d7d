"""The ranked score of a ranked submission from its two runs, the public one and the secret-seed one (issue 28).

The score used to be the slower of the two runs' scores. A maximum of two noisy estimates is biased upward and
spreads more than either, and one outlier run decides it: a secret run that read an 8 µs case at 9.78 µs (7.6-8.1 µs
in the others) moved a ranked score by +7%. Here the two runs are compared **case by case**, from what a run keeps
of each case (median, quartiles, sd, number of samples; the raw samples are not stored):

- Their difference is measured against what two fresh runs of one file differ by: each run's median carries an
  offset of its fresh process pair (``runners.compare.process_offset_sd``: about 0.2 µs whatever the case's size) and
  its own standard error (``runners.compare.median_se``). A test on the raw samples (Mann-Whitney, a bootstrap of
  one run's calls) would ask whether the calls of the two runs come from one distribution; they do not, by that
  offset, on nearly every small case, so such a test would flag honest pairs all the time.
- **Within that noise** (``|z| <= Z_CLEAR``), the case's two medians are pooled: their precision-weighted
  geometric mean (equal weights in practice), which halves the offset's variance instead of keeping the larger
  reading.
- **Secret clearly slower** (``z > Z_CLEAR``): the case ranks by the secret run's median (nothing is hidden: a
  kernel faster on the public inputs than on fresh ones, the thing the secret run is there to catch, ranks no
  better than under the maximum), and the pair is **flagged** with a note the author sees and an admin can review.
- **Public clearly slower** (``z < -Z_CLEAR``): the case ranks by the secret run's median too. The secret inputs
  cannot be known in advance, so that reading is the one a kernel cannot have prepared for; a slow public reading is
  an outlier run, not a trick (being slower on the public inputs gains nothing). Noted, not flagged.

The score is then the problem's rule over the per-case figures (``scoring.aggregate``), as a run's score is over its
medians. Pure functions; ``recording`` stores the result on the job and ``ranking`` ranks by it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from leaderboards.scoring import aggregate, run_score
from runners.compare import median_se, process_offset_sd
from runners.contract import RankingRule, RunResult, TimingStats

Z_CLEAR = 3.5
"""How many sds of two runs' expected difference make a case's two readings clearly different. 3.5: an honest pair
of one of a problem's cases crosses it about once in 4,000 under normal noise; the offset's clusters and the runs'
slow tails make it more often than that, and a wrong flag costs only the pooling of one case."""


class Outcome:
    POOLED = "pooled"
    SECRET_SLOWER = "secret slower"
    PUBLIC_SLOWER = "public slower"


@dataclass(frozen=True)
class CasePool:
    """One benchmark case of a ranked pair: both runs' medians, what the case ranks by and why."""

    index: int
    public_ns: float
    secret_ns: float
    ranked_ns: float
    z: float
    """(log secret - log public) / the sd two runs of one file differ by: above ``Z_CLEAR`` the secret is clearly
    slower."""
    outcome: str


@dataclass(frozen=True)
class RankedScore:
    score_ns: float
    flagged: bool
    """Whether a case ran clearly slower on the secret-seed inputs: an admin should look (``note`` says where)."""
    note: str | None
    """What the author is told when the score is not a plain pooling of the two runs, else None."""
    cases: tuple[CasePool, ...] = ()


def pair_sd(public: TimingStats, secret: TimingStats) -> float:
    """The sd of log(secret median / public median) for two runs of one file: both fresh processes' offsets and both
    medians' standard errors. The offset is taken at the larger median: it is about 0.2 µs whatever the size, so two
    readings 1 ns and 400 ns are not "the same within 0.2 µs" of a 1 ns case."""
    offset = process_offset_sd(max(public.median_ns, secret.median_ns))
    return math.sqrt(2.0 * offset**2 + median_se(public) ** 2 + median_se(secret) ** 2)


def pool_case(index: int, public: TimingStats, secret: TimingStats) -> CasePool:
    """One case's figure: pooled when the two runs agree within their noise, else the secret run's median."""
    lp, ls = math.log(public.median_ns), math.log(secret.median_ns)
    z = (ls - lp) / pair_sd(public, secret)
    if z > Z_CLEAR:
        return CasePool(index, public.median_ns, secret.median_ns, secret.median_ns, z, Outcome.SECRET_SLOWER)
    if z < -Z_CLEAR:
        return CasePool(index, public.median_ns, secret.median_ns, secret.median_ns, z, Outcome.PUBLIC_SLOWER)
    offset = process_offset_sd(max(public.median_ns, secret.median_ns)) ** 2
    wp, ws = 1.0 / (offset + median_se(public) ** 2), 1.0 / (offset + median_se(secret) ** 2)
    pooled = math.exp((wp * lp + ws * ls) / (wp + ws))
    return CasePool(index, public.median_ns, secret.median_ns, pooled, z, Outcome.POOLED)


def _case_name(result: RunResult, index: int) -> str:
    case = result.benchmarks[index].case
    inner = ", ".join(f"{k}={v}" for k, v in list(case.items())[:4])
    return f"case {index + 1}" + (f" ({inner[:80]})" if inner else "")


def ranked_score(public: RunResult, secret: RunResult, rule: RankingRule) -> RankedScore | None:
    """The ranked score of a passed public and a passed secret-seed run of one job (None when either has no score).
    Runs whose cases do not line up (a result stored under other cases) fall back to the slower run's score."""
    pub_score, sec_score = run_score(public, rule), run_score(secret, rule)
    if pub_score is None or sec_score is None:
        return None
    pairs = [
        (p.stats, s.stats)
        for p, s in zip(public.benchmarks, secret.benchmarks, strict=False)
        if p.stats is not None and s.stats is not None and p.index == s.index
    ]
    if len(pairs) != len(public.benchmarks) or len(pairs) != len(secret.benchmarks):
        note = "the two runs' cases do not line up, so the slower run's score counts"
        return RankedScore(max(pub_score, sec_score), False, note)
    cases = tuple(pool_case(i, p, s) for i, (p, s) in enumerate(pairs))
    score = aggregate([c.ranked_ns for c in cases], rule)
    notes = []
    for c in cases:
        if c.outcome == Outcome.POOLED:
            continue
        name = _case_name(public, c.index)
        if c.outcome == Outcome.SECRET_SLOWER:
            notes.append(
                f"{name} ran {c.secret_ns / c.public_ns - 1:.1%} slower on the secret-seed inputs than on the public "
                f"ones, more than two runs of one file differ by: it counts at the secret-seed run's time"
            )
        else:
            notes.append(
                f"{name} ran {c.public_ns / c.secret_ns - 1:.1%} slower in the public run than in the secret-seed "
                f"run, more than two runs of one file differ by: it counts at the secret-seed run's time"
            )
    flagged = any(c.outcome == Outcome.SECRET_SLOWER for c in cases)
    if flagged:
        notes.append("flagged for an admin to look at")
    return RankedScore(score, flagged, "; ".join(notes) if notes else None, cases)
