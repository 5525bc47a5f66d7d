"""Score history (issue 37) on SQLite and PostgreSQL: only the steps where a user's best improved are stored and
returned, the answer is bounded in series and points whatever is stored, and the steps are right (each user's best
over time equals the running minimum of their eligible scores, recorded in any order)."""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import delete, select, text

from leaderboards import ranking
from leaderboards.errors import InvalidChange
from leaderboards.models import Leaderboard, ScoreImprovement
from leaderboards.results import HistoryPoint, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.viewing import HISTORY_MAX_POINTS, HISTORY_MAX_SERIES
from runners.contract import Mode, Verdict

CODE = b"def custom_kernel(data):\n    return data\n"
MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations" / "versions"


@pytest.fixture
def board(service: LeaderboardService, tmp_path: Path) -> str:
    service.create_leaderboard(make_problem(tmp_path), deadline=future(), devices=["cpu", "H100"])
    return "add"


def submit(service: LeaderboardService, user: str, device: str = "cpu") -> tuple[int, int]:
    receipt = service.submit(
        UserRef(user), "sub.py", CODE + f"# {random.random()}\n".encode(), "add", [device], Mode.RANKED
    )
    return receipt.submission_id, receipt.jobs[0].job_id


def record(service: LeaderboardService, job: int, score: float, *, secret_passes: bool = True) -> None:
    service.record_run(job, run_result([score, score], mode=Mode.RANKED))
    verdict = Verdict.ACCEPTED if secret_passes else Verdict.WRONG_ANSWER
    service.record_run(job, run_result([score, score], verdict=verdict, mode=Mode.RANKED), secret=True)


def running_best(points: Iterable[tuple[datetime, int, float]]) -> list[tuple[int, float]]:
    """(submission, score) where the running minimum strictly fell, in submission order: the truth."""
    out: list[tuple[int, float]] = []
    for _, sid, score in sorted(points):
        if not out or score < out[-1][1]:
            out.append((sid, score))
    return out


def scores_of(points: Iterable[HistoryPoint]) -> list[float]:
    return [round(p.score_ns, 6) for p in points]  # the ranked score is a geometric mean: 20.000000000000004


def stored_steps(service: LeaderboardService) -> set[tuple]:
    with service.db.transaction() as s:
        return {(r.device, r.user_id, r.submission_id, r.score) for r in s.scalars(select(ScoreImprovement))}


def steps_from_runs(service: LeaderboardService) -> set[tuple]:
    with service.db.transaction() as s:
        lb = s.scalar(select(Leaderboard).where(Leaderboard.name == "add"))
        assert lb is not None
        return {
            (r.device, r.user_id, r.submission_id, r.score) for r in s.execute(ranking.improvements_query(lb)).all()
        }


def test_each_users_steps_are_their_true_best_over_time_recorded_in_any_order(
    service: LeaderboardService, board: str
) -> None:
    rng = random.Random(37)
    users = ["ada", "bo", "cy", "dee"]
    submitted: list[tuple[str, int, int, float, bool]] = []
    for _ in range(40):
        user = rng.choice(users)
        sid, job = submit(service, user)
        submitted.append((user, sid, job, rng.choice([10.0, 20.0, 30.0, 40.0, 50.0, 60.0]), rng.random() > 0.15))
    # Workers finish jobs in any order: a later submission's result often lands before an earlier one's.
    for _, _, job, score, secret_ok in rng.sample(submitted, len(submitted)):
        record(service, job, score, secret_passes=secret_ok)

    created = {s.submission_id: s.created_at for s in service.user_submissions(UserRef("ada"), "add", limit=1000)}
    for user in users[1:]:
        created |= {s.submission_id: s.created_at for s in service.user_submissions(UserRef(user), "add", limit=1000)}
    history = service.score_history_page(board, "cpu", limit=10, max_points=100)
    ranked = {e.user_name: e for e in service.ranking(board, "cpu").entries}
    assert [s.user_name for s in history.series] == list(ranked)  # ranking order
    assert history.total == len(ranked)
    for series in history.series:
        truth = running_best(
            (created[sid], sid, score) for user, sid, _, score, ok in submitted if user == series.user_name and ok
        )
        assert [p.submission_id for p in series.points] == [sid for sid, _ in truth]
        assert [p.score_ns for p in series.points] == pytest.approx([score for _, score in truth])
        assert series.points[-1].score_ns == ranked[series.user_name].score_ns  # ends at the ranked best
        assert not series.thinned
    everyone = running_best((created[sid], sid, score) for _, sid, _, score, ok in submitted if ok)
    assert [p.submission_id for p in history.best] == [sid for sid, _ in everyone]
    assert [p.score_ns for p in history.best] == pytest.approx([score for _, score in everyone])
    assert stored_steps(service) == steps_from_runs(service)  # kept on the write path == computed from runs


def test_steps_follow_deletions_bans_and_rebuilds(service: LeaderboardService, board: str) -> None:
    sids = {}
    for user, score in (("kim", 80.0), ("lee", 50.0), ("kim", 20.0), ("lee", 5.0), ("max", 1.0)):
        sid, job = submit(service, user)
        record(service, job, score)
        sids[user, score] = sid
    service.delete_submission(sids["lee", 5.0], actor="admin")
    service.ban_user(UserRef("max"), reason="cheating", actor="admin")
    history = service.score_history_page(board, "cpu")
    assert [p.score_ns for p in history.best] == pytest.approx([80.0, 50.0, 20.0])  # lee's 5 deleted, max banned
    assert {s.user_name: scores_of(s.points) for s in history.series} == {
        "kim": [80.0, 20.0],
        "lee": [50.0],
    }
    assert stored_steps(service) == steps_from_runs(service)
    before = stored_steps(service)
    service.rebuild_rankings(board)
    assert stored_steps(service) == before
    service.unban_user(UserRef("max"), actor="admin")
    assert [p.score_ns for p in service.score_history_page(board, "cpu").best] == pytest.approx([80.0, 50.0, 20.0, 1.0])
    assert service.score_history(board, "cpu")[-1][1] == pytest.approx(1.0)  # the chart's data: the same best over time


def test_a_series_is_thinned_to_max_points_keeping_its_first_and_current_best(
    service: LeaderboardService, board: str
) -> None:
    service = LeaderboardService(service.db, service.settings.model_copy(update={"max_pending_jobs_per_user": 100}))
    scores = [1000.0 - i for i in range(60)]  # 60 improvements in a row: 60 steps stored
    for score in scores:
        record(service, submit(service, "grinder")[1], score)
    full = service.score_history_page(board, "cpu", max_points=HISTORY_MAX_POINTS)
    assert scores_of(full.series[0].points) == scores and not full.series[0].thinned
    for cap in (2, 7, 25):
        history = service.score_history_page(board, "cpu", max_points=cap)
        (series,) = history.series
        got = scores_of(series.points)
        assert len(got) <= cap and series.thinned and history.best_thinned
        assert got[0] == scores[0] and got[-1] == scores[-1]  # the first step and the current best
        assert got == sorted(got, reverse=True) and set(got) <= set(scores)  # true steps, still a step function
        assert len(history.best) <= cap


def test_pages_of_series_are_capped(service: LeaderboardService, board: str) -> None:
    for i in range(5):
        record(service, submit(service, f"u{i}")[1], 10.0 + i)
    first = service.score_history_page(board, "cpu", limit=2)
    second = service.score_history_page(board, "cpu", limit=2, offset=2)
    assert [s.user_name for s in first.series] == ["u0", "u1"] and [s.rank for s in first.series] == [1, 2]
    assert [s.user_name for s in second.series] == ["u2", "u3"] and [s.rank for s in second.series] == [3, 4]
    assert first.total == second.total == 5
    with pytest.raises(InvalidChange):
        service.score_history_page(board, "cpu", limit=HISTORY_MAX_SERIES + 1)
    with pytest.raises(InvalidChange):
        service.score_history_page(board, "cpu", max_points=HISTORY_MAX_POINTS + 1)
    with pytest.raises(InvalidChange):
        service.score_history_page(board, "cpu", max_points=1)


def test_the_migration_fills_the_steps_from_the_runs_already_stored(service: LeaderboardService, board: str) -> None:
    # Migration 0007 computes the steps of every stored ranking in SQL of its own (it must not change with the
    # code): on the same runs it must give what the write path kept.
    spec = importlib.util.spec_from_file_location("m0007", MIGRATIONS / "0007_score_improvements.py")
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    rng = random.Random(7)
    for _ in range(25):
        user = rng.choice(["ada", "bo", "cy"])
        _, job = submit(service, user, device=rng.choice(["cpu", "H100"]))
        record(service, job, rng.choice([10.0, 20.0, 30.0, 40.0]), secret_passes=rng.random() > 0.2)
    submit(service, "queued")  # a job without runs: no step
    kept = stored_steps(service)
    assert kept and {d for d, *_ in kept} == {"cpu", "H100"}
    with service.db.engine.begin() as conn:
        conn.execute(delete(ScoreImprovement))
        conn.execute(text(migration.BACKFILL))
    assert {(d, u, sid, round(score, 6)) for d, u, sid, score in stored_steps(service)} == {
        (d, u, sid, round(score, 6)) for d, u, sid, score in kept
    }
