"""Final standings' statistics (issue 29): two accounts with one file share a rank, a kernel 3% faster on large cases
ranks alone, and standings recompute bit-identically from the statistics they were frozen with. Each trial gives each
account a public and a secret-seed run drawn from ``tests/timing_noise.py`` (the H100/H200 harness's measured process
offset, per-call noise with a slow tail, and with ``OUTLIERS`` one run in 50 reading a case 1-2 µs slow)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence

import pytest
from timing_noise import OUTLIERS, QUIET, Noise, case_stats

from leaderboards.standings import Entry, Standing, entry_score, rank, told_apart
from runners.contract import RankingRule, TimingStats

TRIALS = 200
VECTORADD = (8_000.0, 127_000.0, 520_000.0)
LARGE = (30_000.0, 200_000.0, 500_000.0)
MIXED = (3_000.0, 8_000.0, 30_000.0, 200_000.0, 500_000.0)


def entry(rng: random.Random, user: int, true_ns: Sequence[float], noise: Noise) -> Entry:
    """One account's ranked job: per case its public and secret run's statistics, as the runs store them."""
    cases = tuple(
        tuple(case_stats(rng, t, noise).model_dump(mode="json") for _ in ("public", "secret")) for t in true_ns
    )
    return Entry(user_id=user, user_name=f"u{user}", submission_id=user, file_name="k.py", cases=cases)


def tied_share(true_a: Sequence[float], true_b: Sequence[float], noise: Noise, seed: int) -> float:
    rng = random.Random(seed)
    tied = 0
    for _ in range(TRIALS):
        standings = rank([entry(rng, 1, true_a, noise), entry(rng, 2, true_b, noise)], RankingRule.GEOMEAN)
        tied += standings[0].rank == standings[1].rank == 1
    return tied / TRIALS


@pytest.mark.parametrize("cases", [VECTORADD, LARGE, MIXED], ids=["vectoradd", "large", "mixed"])
@pytest.mark.parametrize("noise", [QUIET, OUTLIERS], ids=["offsets", "outliers"])
def test_identical_files_under_two_accounts_are_tied(cases: Sequence[float], noise: Noise) -> None:
    assert tied_share(cases, cases, noise, seed=29) >= 0.95  # at least 19 trials in 20


@pytest.mark.parametrize("noise", [QUIET, OUTLIERS], ids=["offsets", "outliers"])
def test_a_kernel_3_percent_faster_on_large_cases_ranks_alone(noise: Noise) -> None:
    faster = [t * 0.97 for t in LARGE]
    assert tied_share(faster, LARGE, noise, seed=30) <= 0.05  # told apart at least 19 trials in 20


def test_the_faster_entry_ranks_first_and_the_interval_holds_its_score() -> None:
    rng = random.Random(5)
    slow, fast = entry(rng, 1, LARGE, QUIET), entry(rng, 2, [t * 0.9 for t in LARGE], QUIET)
    first, second = rank([slow, fast], RankingRule.GEOMEAN)
    assert (first.entry.user_id, first.rank, first.tied) == (2, 1, False)
    assert (second.entry.user_id, second.rank, second.tied) == (1, 2, False)
    low, high = first.interval_ns
    assert low < first.score_ns < high and high / low < 1.02  # large cases: the interval is tight


def steady(user: int, true_ns: Sequence[float]) -> Entry:
    """An entry whose two runs read every case at exactly ``true_ns`` (no spread: only the process offset counts)."""
    cases = tuple(
        tuple(
            TimingStats(
                samples=31, median_ns=t, mean_ns=t, std_ns=0.0, stderr_ns=0.0, min_ns=t, max_ns=t, p25_ns=t, p75_ns=t
            ).model_dump(mode="json")
            for _ in ("public", "secret")
        )
        for t in true_ns
    )
    return Entry(user_id=user, user_name=f"u{user}", submission_id=user, file_name="k.py", cases=cases)


def test_a_chain_of_close_entries_shares_ranks_only_with_those_it_cannot_be_told_from() -> None:
    # vectoradd's cases: the score's log sd is 0.74% (its 8 µs case's offset), two entries apart beyond 2.05%.
    # a ~ b (1.2% apart) and b ~ c (1.3%), but a is clearly faster than c (2.5%): a and b rank 1, c ranks 2.
    a, b, c = (steady(i, [t * f for t in VECTORADD]) for i, f in ((1, 1.0), (2, 1.012), (3, 1.025)))
    scores = [entry_score(e, RankingRule.GEOMEAN) for e in (a, b, c)]
    assert 0.0073 < scores[0][1] < 0.0075
    assert not told_apart(scores[0], scores[1]) and not told_apart(scores[1], scores[2])
    assert told_apart(scores[0], scores[2])
    standings = {s.entry.user_id: s for s in rank([c, b, a], RankingRule.GEOMEAN)}
    assert [(standings[u].rank, standings[u].tied) for u in (1, 2, 3)] == [(1, True), (1, True), (2, False)]


def snapshot(standings: Sequence[Standing]) -> str:
    return json.dumps([[s.rank, s.tied, s.score_ns, s.log_sd, s.entry.to_json()] for s in standings])


def test_standings_recompute_bit_identically_from_the_stored_statistics() -> None:
    rng = random.Random(17)
    entries = [entry(rng, u, [t * (1 + 0.004 * u) for t in MIXED], OUTLIERS) for u in range(1, 8)]
    first = rank(entries, RankingRule.GEOMEAN)
    stored = json.loads(json.dumps([e.to_json() for e in entries]))  # what a database's JSON column gives back
    again = rank(reversed([Entry.from_json(e) for e in stored]), RankingRule.GEOMEAN)
    assert snapshot(again) == snapshot(first)
    assert [s.score_ns.hex() for s in again] == [s.score_ns.hex() for s in first]


def test_re_timed_finalists_rank_first_and_the_others_follow_in_their_runs_order() -> None:
    """Issue 29: the deadline re-times the top K; they take the first places by their rounds (here the re-timing
    reverses their order), and the entries outside K (or whose round failed) follow by their runs' statistics."""
    rng = random.Random(7)

    def with_rounds(e: Entry, factor: float) -> Entry:
        """Four rounds, each case read at ``factor`` times its true time (a little noise per round)."""
        rounds = []
        for r in range(4):
            stats = [case_stats(rng, t * factor, QUIET).model_dump(mode="json") for t in LARGE]
            score = math.exp(math.fsum(math.log(st["median_ns"]) for st in stats) / len(stats))
            rounds.append({"round": r, "machine": "m", "score_ns": score, "stats": stats})
        return Entry(e.user_id, e.user_name, e.submission_id, e.file_name, e.cases, rounds=tuple(rounds))

    a, b = (entry(rng, u, LARGE, QUIET) for u in (1, 2))
    c, d = (entry(rng, u, [t * f for t in LARGE], QUIET) for u, f in ((3, 1.2), (4, 1.5)))
    standings = rank([with_rounds(a, 1.1), with_rounds(b, 1.0), d, c], RankingRule.GEOMEAN)
    assert [s.entry.user_name for s in standings] == ["u2", "u1", "u3", "u4"]
    assert [s.rank for s in standings] == [1, 2, 3, 4]


def test_an_entry_just_outside_the_re_timed_top_k_that_runs_cannot_tell_from_them_shares_their_rank() -> None:
    """A red team: with K = 2 and three byte-identical files, the third (not re-timed) came 3rd while the two re-timed
    shared 1st, though nothing told it from them. A tail entry ranks by its runs against every entry, never above the
    last re-timed one."""
    rng = random.Random(11)
    same = [steady(u, VECTORADD) for u in (1, 2, 3)]

    def with_rounds(e: Entry) -> Entry:
        rounds = []
        for r in range(4):
            stats = [case_stats(rng, t, QUIET).model_dump(mode="json") for t in VECTORADD]
            score = math.exp(math.fsum(math.log(st["median_ns"]) for st in stats) / len(stats))
            rounds.append({"round": r, "machine": "m", "score_ns": score, "stats": stats})
        return Entry(e.user_id, e.user_name, e.submission_id, e.file_name, e.cases, rounds=tuple(rounds))

    slower = steady(4, [t * 1.5 for t in VECTORADD])
    standings = rank([with_rounds(same[0]), with_rounds(same[1]), same[2], slower], RankingRule.GEOMEAN)
    assert sorted((s.entry.user_id, s.rank, s.tied) for s in standings) == [
        (1, 1, True), (2, 1, True), (3, 1, True), (4, 4, False)]  # fmt: skip


def tight(median_ns: float) -> TimingStats:
    """A precise reading: 1,000 samples, 1% spread."""
    m = median_ns
    return TimingStats(samples=1000, median_ns=m, mean_ns=m, std_ns=m * 0.01, stderr_ns=m * 0.01 / 31.6,
                       min_ns=m * 0.98, max_ns=m * 1.05, p25_ns=m * 0.995, p75_ns=m * 1.005)  # fmt: skip


def two_runs(user: int, public: Sequence[float], secret: Sequence[float]) -> Entry:
    pairs = zip(public, secret, strict=True)
    cases = tuple((tight(p).model_dump(mode="json"), tight(s).model_dump(mode="json")) for p, s in pairs)
    return Entry(user_id=user, user_name=f"u{user}", submission_id=user, file_name="k.py", cases=cases)


def test_an_entry_cannot_buy_a_tie_at_the_top_by_making_its_own_runs_disagree() -> None:
    """A red team's finding: the public inputs come from public seeds, so a kernel can recognise them and run 100x
    slower on them only. Its runs then disagree, and that disagreement must not widen its interval into a tie with
    the leader: the secret run's reading is the one it ranks by, and it is 50% slower than the leader."""
    cases = (100_000.0, 200_000.0, 400_000.0)
    leader = two_runs(1, cases, cases)
    honest = two_runs(2, [c * 1.10 for c in cases], [c * 1.10 for c in cases])
    slow_on_public = [cases[0] * 150, *(c * 1.5 for c in cases[1:])]
    cheat = two_runs(3, slow_on_public, [c * 1.5 for c in cases])
    standings = rank([cheat, honest, leader], RankingRule.GEOMEAN)
    assert [(s.entry.user_id, s.rank, s.tied) for s in standings] == [(1, 1, False), (2, 2, False), (3, 3, False)]


def test_a_slower_entry_never_ranks_above_a_faster_one() -> None:
    """An imprecise entry (few samples, a wide spread) may be impossible to tell from the leader, but it never takes a
    better rank than an entry faster than it: at best it shares the rank of the entry just above it."""
    cases = (100_000.0, 200_000.0, 400_000.0)
    leader = two_runs(1, cases, cases)
    second = two_runs(2, [c * 1.10 for c in cases], [c * 1.10 for c in cases])
    wide = [
        TimingStats(
            samples=3,
            median_ns=c * 1.5,
            mean_ns=c * 1.5,
            std_ns=c,
            stderr_ns=c / 1.7,
            min_ns=c * 0.6,
            max_ns=c * 3,
            p25_ns=c * 0.8,
            p75_ns=c * 2.5,
        ).model_dump(mode="json")
        for c in cases
    ]
    imprecise = Entry(3, "u3", 3, "k.py", tuple((w, w) for w in wide))
    scores = {e.user_id: entry_score(e, RankingRule.GEOMEAN) for e in (leader, second, imprecise)}
    assert not told_apart(scores[1], scores[3]) and told_apart(scores[1], scores[2])
    standings = rank([imprecise, second, leader], RankingRule.GEOMEAN)
    assert [(s.entry.user_id, s.rank, s.tied) for s in standings] == [(1, 1, False), (2, 2, True), (3, 2, True)]


def test_re_timed_rounds_that_read_alike_to_the_last_digit_still_show_an_interval() -> None:
    from leaderboards.standings import rounds_score

    rounds = tuple({"round": r, "machine": "m", "score_ns": 1000.0, "stats": []} for r in range(4))
    score, log_sd = rounds_score(Entry(1, "u1", 1, "k.py", (), rounds=rounds))
    assert score == pytest.approx(1000.0) and log_sd > 0.1  # 0.25 µs of offset is a quarter of 1 µs
