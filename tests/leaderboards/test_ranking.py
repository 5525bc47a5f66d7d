"""Ranking rules on the database (SQLite and PostgreSQL): best per user, ties, the secret run, deletions, bans,
rank changes, and that the kept ranking always equals the one computed from the runs."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select

from leaderboards import ranking
from leaderboards.errors import Banned
from leaderboards.formatting import score_text
from leaderboards.models import Leaderboard, User
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from runners.contract import Mode, Verdict

CODE = b"def custom_kernel(data):\n    return data\n"


@pytest.fixture
def board(service: LeaderboardService, tmp_path: Path) -> str:
    service.create_leaderboard(make_problem(tmp_path), deadline=future(), devices=["cpu", "H100"])
    return "add"


def finish(
    service: LeaderboardService,
    user: str,
    medians: Sequence[float],
    *,
    device: str = "cpu",
    secret_passes: bool = True,
    leaderboard: str = "add",
    mode: Mode = Mode.RANKED,
    content: bytes | None = None,
) -> int:
    """Submit and record the results a worker would: the public run, then (ranked) the secret run."""
    receipt = service.submit(
        UserRef(user), "sub.py", content or CODE + f"# {random.random()}\n".encode(), leaderboard, [device], mode
    )
    job = receipt.jobs[0].job_id
    service.record_run(job, run_result(medians, mode=mode))
    if mode is Mode.RANKED:
        verdict = Verdict.ACCEPTED if secret_passes else Verdict.WRONG_ANSWER
        service.record_run(job, run_result(medians, verdict=verdict, mode=mode), secret=True)
    return receipt.submission_id


def names(service: LeaderboardService, device: str = "cpu") -> list[str]:
    return [e.user_name for e in service.ranking("add", device).entries]


def assert_consistent(service: LeaderboardService, name: str = "add") -> None:
    """The kept ranking (what ``ranking`` reads) equals the one computed from scratch from the runs."""
    with service.db.transaction() as s:
        lb = s.scalar(select(Leaderboard).where(Leaderboard.name == name))
        assert lb is not None
        banned = set(s.scalars(select(User.id).where(User.is_banned.is_(True))))
        expected = {
            (e.device, e.user_id, e.submission_id, e.score)
            for e in ranking.eligible_bests(s, lb)
            if e.user_id not in banned
        }
    kept = {
        (device, e.user_id, e.submission_id, e.score_ns)
        for device in ("cpu", "H100")
        for e in service.ranking(name, device, None).entries
    }
    assert kept == expected


def test_best_submission_per_user_ordered_by_score(service: LeaderboardService, board: str) -> None:
    finish(service, "alice", [300.0, 300.0])
    finish(service, "bob", [100.0, 100.0])
    better = finish(service, "alice", [50.0, 50.0])
    finish(service, "alice", [900.0, 900.0])  # a later, slower one does not replace her best
    entries = service.ranking(board, "cpu").entries
    assert [(e.rank, e.user_name) for e in entries] == [(1, "alice"), (2, "bob")]
    assert entries[0].submission_id == better and entries[0].score_ns == pytest.approx(50.0)
    assert_consistent(service)


def test_a_tie_goes_to_the_earlier_submission(service: LeaderboardService, board: str) -> None:
    first = finish(service, "carol", [100.0, 100.0])
    finish(service, "dave", [100.0, 100.0])
    entries = service.ranking(board, "cpu").entries
    assert [e.user_name for e in entries] == ["carol", "dave"]
    assert entries[0].submission_id == first
    # dave's equal score later on does not move him ahead, and his own tie does not replace his earlier best
    finish(service, "dave", [100.0, 100.0])
    assert names(service) == ["carol", "dave"]
    assert_consistent(service)


@pytest.mark.parametrize(("rule", "winner"), [("geom", "spiky"), ("mean", "even"), ("last", "even")])
def test_ranking_rule_of_the_problem_decides(
    service: LeaderboardService, tmp_path: Path, rule: str, winner: str
) -> None:
    service.create_leaderboard(make_problem(tmp_path, ranking_by=rule), deadline=future(), devices=["cpu"])
    finish(service, "spiky", [1.0, 400.0])
    finish(service, "even", [30.0, 30.0])
    ranking_ = service.ranking("add")
    assert ranking_.ranking_by == rule and ranking_.entries[0].user_name == winner


def test_the_secret_run_must_pass_too(service: LeaderboardService, board: str) -> None:
    failed_secret = finish(service, "eve", [1.0, 1.0], secret_passes=False)
    finish(service, "frank", [500.0, 500.0])
    assert names(service) == ["frank"]
    job = service.submission_status(failed_secret).jobs[0]
    assert job.public_passed is True and job.secret_passed is False and job.rank is None
    assert_consistent(service)


def test_the_worse_of_the_public_and_the_secret_run_is_the_score(service: LeaderboardService, board: str) -> None:
    # A submission that precomputed the public inputs' answers is fast only on the public run: it ranks by its
    # secret run.
    r = service.submit(UserRef("ivy"), "s.py", CODE, board, ["cpu"])
    service.record_run(r.jobs[0].job_id, run_result([1.0, 1.0]))
    service.record_run(r.jobs[0].job_id, run_result([400.0, 400.0]), secret=True)
    finish(service, "joe", [100.0, 100.0])
    ranking_now = service.ranking("add", "cpu").entries
    assert [e.user_name for e in ranking_now] == ["joe", "ivy"]
    assert ranking_now[1].score_ns == pytest.approx(400.0)
    # Its own report shows the public run's score and, beside it, the one the ranking uses (newcomer, 2026-11-25: the
    # report said 17.6 ms, the rankings 25.2 ms, with no word why).
    job = service.submission_status(r.submission_id).jobs[0]
    assert job.score_ns == pytest.approx(1.0) and job.ranked_score_ns == pytest.approx(400.0)
    assert score_text(job.score_ns, job.ranked_score_ns) == (
        "1.00 ns (ranked by 400 ns, from this run and the secret-seed run)"
    )
    assert job.ranked_flagged and job.ranked_note is not None and "flagged for an admin" in job.ranked_note
    assert score_text(100.0, 100.0) == "100 ns"  # the same figure is not repeated
    assert_consistent(service)


def test_a_public_run_alone_or_a_secret_run_alone_is_not_ranked(service: LeaderboardService, board: str) -> None:
    r = service.submit(UserRef("gina"), "s.py", CODE, board, ["cpu"])
    service.record_run(r.jobs[0].job_id, run_result([10.0, 10.0]), secret=True)
    assert names(service) == []
    recorded = service.record_run(r.jobs[0].job_id, run_result([10.0, 10.0]))  # order does not matter
    assert recorded.eligible and recorded.rank == 1 and names(service) == ["gina"]


def test_only_ranked_submissions_are_ranked(service: LeaderboardService, board: str) -> None:
    finish(service, "hank", [1.0, 1.0], mode=Mode.BENCHMARK)
    assert names(service) == []


def test_devices_have_separate_rankings(service: LeaderboardService, board: str) -> None:
    finish(service, "ivy", [10.0, 10.0], device="H100")
    finish(service, "jack", [20.0, 20.0], device="cpu")
    assert names(service, "H100") == ["ivy"] and names(service, "cpu") == ["jack"]
    assert_consistent(service)


def test_deleting_a_submission_removes_it_and_the_next_best_counts(service: LeaderboardService, board: str) -> None:
    second_best = finish(service, "kim", [80.0, 80.0])
    best = finish(service, "kim", [20.0, 20.0])
    finish(service, "lee", [50.0, 50.0])
    assert names(service) == ["kim", "lee"]
    service.delete_submission(best, actor="admin")
    entries = service.ranking(board, "cpu").entries
    assert [(e.user_name, e.submission_id) for e in entries] == [
        ("lee", entries[0].submission_id),
        ("kim", second_best),
    ]
    service.delete_submission(second_best, user=UserRef("kim"))
    assert names(service) == ["lee"]
    assert_consistent(service)


def test_banned_users_leave_the_ranking_and_come_back_when_unbanned(service: LeaderboardService, board: str) -> None:
    finish(service, "mallory", [1.0, 1.0])
    finish(service, "nina", [5.0, 5.0])
    service.ban_user(UserRef("mallory"), reason="cheating", actor="admin")
    ranking_ = service.ranking(board, "cpu")
    assert [(e.rank, e.user_name) for e in ranking_.entries] == [(1, "nina")] and ranking_.total == 1
    service.unban_user(UserRef("mallory"), actor="admin")
    assert names(service) == ["mallory", "nina"]


def test_limit_cuts_entries_but_total_counts_everyone(service: LeaderboardService, board: str) -> None:
    for i in range(5):
        finish(service, f"u{i}", [10.0 + i, 10.0 + i])
    ranking_ = service.ranking(board, "cpu", limit=2)
    assert [e.user_name for e in ranking_.entries] == ["u0", "u1"] and ranking_.total == 5


def test_new_top_ranks_are_recorded_and_announced_exactly_once(service: LeaderboardService, board: str) -> None:
    finish(service, "a", [100.0, 100.0])  # new #1
    finish(service, "b", [200.0, 200.0])  # #2
    finish(service, "c", [300.0, 300.0])  # #3
    finish(service, "d", [400.0, 400.0])  # #4: outside the top 3, nothing to announce
    finish(service, "b", [250.0, 250.0])  # not a personal best: nothing
    finish(service, "c", [50.0, 50.0])  # c takes #1 from #3
    first = service.claim_announcements("bot-1")
    assert [(c.user_name, c.old_rank, c.new_rank) for c in first] == [
        ("a", None, 1),
        ("b", None, 2),
        ("c", None, 3),
        ("c", 3, 1),
    ]
    assert first[-1].previous_score_ns == pytest.approx(300.0) and first[-1].score_ns == pytest.approx(50.0)
    assert service.claim_announcements("bot-2") == ()  # a second bot (or a restarted one) gets nothing again
    finish(service, "d", [10.0, 10.0])
    assert [(c.user_name, c.new_rank) for c in service.claim_announcements("bot-2", limit=5)] == [("d", 1)]


def test_a_forced_problem_change_starts_the_ranking_over(
    service: LeaderboardService, board: str, tmp_path: Path
) -> None:
    finish(service, "old", [10.0, 10.0])
    changed = make_problem(tmp_path / "v2", benchmarks=[{"size": 5000, "seed": 9}])
    update = service.update_leaderboard(board, problem=changed, force=True, actor="admin")
    assert update.ranking_reset and names(service) == []
    finish(service, "new", [99.0])
    assert names(service) == ["new"]
    assert service.rebuild_rankings(board) == 1  # the old run's fingerprint no longer counts
    assert_consistent(service)


def test_kept_ranking_matches_runs_after_random_operations(service: LeaderboardService, board: str) -> None:
    rng = random.Random(7)
    users = [f"p{i}" for i in range(6)]
    submissions: list[int] = []
    for step in range(40):
        op = rng.random()
        if op < 0.75 or not submissions:
            user = rng.choice(users)
            medians = [float(rng.choice([10, 20, 30, 40])), float(rng.choice([10, 20, 30]))]
            device = rng.choice(["cpu", "H100"])
            try:
                submissions.append(finish(service, user, medians, device=device, secret_passes=rng.random() > 0.2))
            except Banned:
                continue
        elif op < 0.9:
            victim = submissions.pop(rng.randrange(len(submissions)))
            service.delete_submission(victim, actor="admin")
        elif step % 2:
            service.ban_user(UserRef(rng.choice(users)), actor="admin")
        else:
            service.unban_user(UserRef(rng.choice(users)), actor="admin")
        assert_consistent(service)


def test_rank_reported_with_status_and_user_submissions(service: LeaderboardService, board: str) -> None:
    sid = finish(service, "olga", [5.0, 5.0])
    status = service.submission_status(sid)
    assert status.done is False  # the queue (helper C) marks jobs done; results are in already
    assert status.jobs[0].rank == 1 and status.jobs[0].score_ns == pytest.approx(5.0)
    mine = service.user_submissions(UserRef("olga"), board)
    assert [m.submission_id for m in mine] == [sid] and mine[0].jobs[0].rank == 1
    assert service.user_submissions(UserRef("nobody")) == ()


def test_concurrent_submissions_and_results_keep_one_consistent_ranking(
    service: LeaderboardService, board: str
) -> None:
    """Threads submitting the same file and recording results at once: one code row, one user row per person,
    a ranking equal to the runs', and #1 changes announced in order of ever better scores."""
    from concurrent.futures import ThreadPoolExecutor

    from leaderboards.models import SubmissionCode

    def one(i: int) -> None:
        user = f"t{i % 6}"
        r = service.submit(UserRef(user), "sub.py", CODE, board, ["cpu"])
        medians = [float(1000 - 10 * i), 500.0]
        service.record_run(r.jobs[0].job_id, run_result(medians))
        service.record_run(r.jobs[0].job_id, run_result(medians), secret=True)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, range(24)))
    with service.db.transaction() as s:
        assert len(s.scalars(select(SubmissionCode)).all()) == 1
        assert len(s.scalars(select(User)).all()) == 6
    assert_consistent(service)
    assert len(service.ranking(board, "cpu").entries) == 6
    firsts = [c for c in service.claim_announcements("bot", limit=1000) if c.new_rank == 1]
    scores = [c.score_ns for c in firsts]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)


def test_score_history_has_every_eligible_score_in_time_order(service: LeaderboardService, board: str) -> None:
    # What the "best score over time" chart draws: every eligible ranked score, not only each user's current best.
    finish(service, "kim", [80.0, 80.0])
    finish(service, "lee", [50.0, 50.0])
    finish(service, "kim", [20.0, 20.0])
    finish(service, "kim", [90.0, 90.0], secret_passes=False)  # not eligible: the secret run failed
    finish(service, "kim", [10.0, 10.0], mode=Mode.BENCHMARK)  # not ranked
    deleted = finish(service, "lee", [5.0, 5.0])
    service.delete_submission(deleted, actor="admin")
    finish(service, "mallory", [1.0, 1.0])
    service.ban_user(UserRef("mallory"), reason="cheating", actor="admin")
    finish(service, "kim", [30.0, 30.0], device="H100")
    history = service.score_history(board, "cpu")
    assert [score for _, score in history] == pytest.approx([80.0, 50.0, 20.0])
    assert [when for when, _ in history] == sorted(when for when, _ in history)
    assert [score for _, score in service.score_history(board, "H100")] == pytest.approx([30.0])
