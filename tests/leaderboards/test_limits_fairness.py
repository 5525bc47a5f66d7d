"""Limits that hold and a fair queue (issue 11 items 5, 6, 9, 10; issue 10 "fairness and load"), on SQLite and
PostgreSQL: concurrent submitters cannot slip past the rate limit or the pending cap, ranked runs have a lower
default limit than test runs, new files per day are capped, a duplicate answers with the earlier submission, claims
go round-robin between users, ids are never reused, late progress events are dropped, and a Python run is bounded
by the board's limit without a compile budget on top."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import future, make_problem, write_problem
from sqlalchemy import delete, select

from leaderboards.errors import RateLimited
from leaderboards.models import Job, JobEvent, Submission
from leaderboards.problems import load_problem
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu", "H100"])
    return service


def with_settings(svc: LeaderboardService, **changes: object) -> LeaderboardService:
    return LeaderboardService(svc.db, svc.settings.model_copy(update=changes), clock=svc.clock)


def code(n: int) -> bytes:
    return f"def custom_kernel(d):  # {n}\n    return d\n".encode()


def submit(svc: LeaderboardService, user: str = "ann", n: int = 0, mode: str = "test", **kw: object) -> int:
    return svc.submit(UserRef(user), "s.py", code(n), "add", ["cpu"], mode, **kw).submission_id  # type: ignore[arg-type]


def concurrently(n: int, fn) -> tuple[list[object], list[BaseException]]:  # type: ignore[no-untyped-def]
    """Run ``fn(i)`` on ``n`` threads released together; (results, exceptions)."""
    barrier = threading.Barrier(n)
    results: list[object] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        barrier.wait()
        try:
            value = fn(i)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        else:
            with lock:
                results.append(value)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results, errors


def count_submissions(svc: LeaderboardService) -> int:
    with svc.db.transaction() as s:
        return len(s.scalars(select(Submission.id)).all())


def test_concurrent_submits_cannot_pass_the_rate_limit(svc: LeaderboardService) -> None:
    limited = with_settings(svc, rate_limit_per_hour=1)
    submit(limited, "ann", 100)  # the user exists: every submit below races on the same row
    limited = with_settings(svc, rate_limit_per_hour=2)
    accepted, errors = concurrently(6, lambda i: submit(limited, "ann", i))
    assert len(accepted) == 1, f"{len(accepted)} of 6 concurrent submits got past a limit of 2 per hour"
    assert len(errors) == 5 and all(isinstance(e, RateLimited) for e in errors), errors
    assert count_submissions(svc) == 2


def test_concurrent_submits_cannot_pass_the_pending_cap(svc: LeaderboardService) -> None:
    capped = with_settings(svc, max_pending_jobs_per_user=3)
    accepted, errors = concurrently(6, lambda i: submit(capped, "bob", i))
    assert len(accepted) == 3 and all(isinstance(e, RateLimited) for e in errors), (accepted, errors)


def test_default_rate_limit_is_lower_for_ranked_than_for_test_runs(svc: LeaderboardService) -> None:
    defaults = CoreSettings(_env_file=None)
    assert defaults.ranked_rate_limit_per_hour and defaults.rate_limit_per_hour
    assert defaults.ranked_rate_limit_per_hour < defaults.rate_limit_per_hour
    limited = with_settings(svc, ranked_rate_limit_per_hour=2, rate_limit_per_hour=3)
    submit(limited, n=1, mode="ranked")
    submit(limited, n=2, mode="ranked")
    with pytest.raises(RateLimited, match="2 ranked submissions per hour to 'add'; try again after"):
        submit(limited, n=3, mode="ranked")
    for n in range(3):  # test runs have their own, higher, limit
        submit(limited, n=10 + n, mode="test")
    with pytest.raises(RateLimited, match="3 test, benchmark, profile or compare runs per hour"):
        submit(limited, n=20, mode="benchmark")
    # An hour later both windows are open again.
    later = LeaderboardService(svc.db, limited.settings, clock=lambda: svc.clock() + timedelta(hours=1, seconds=1))
    submit(later, n=30, mode="ranked")


def test_leaderboard_limit_counts_every_mode(svc: LeaderboardService) -> None:
    svc.set_rate_limit("add", 2, actor="admin")
    limited = with_settings(svc, ranked_rate_limit_per_hour=50, rate_limit_per_hour=50)
    submit(limited, n=1, mode="ranked")
    submit(limited, n=2, mode="test")
    with pytest.raises(RateLimited, match="2 times per hour"):
        submit(limited, n=3, mode="test")


def test_new_files_per_day_are_capped_but_resubmitting_is_not(svc: LeaderboardService) -> None:
    capped = with_settings(svc, max_new_files_per_day=2)
    submit(capped, n=1)
    submit(capped, n=2)
    with pytest.raises(RateLimited, match="2 different files in the last 24 hours"):
        submit(capped, n=3)
    submit(capped, n=1, mode="benchmark")  # a file already stored is fine
    submit(capped, "someone-else", n=3)  # the cap is per user
    assert count_submissions(svc) == 4


def test_duplicate_submission_answers_with_the_earlier_one_unless_forced(svc: LeaderboardService) -> None:
    dedup = with_settings(svc, duplicate_window_s=600)
    first = dedup.submit(UserRef("ann"), "s.py", code(1), "add", ["cpu"], "ranked")
    again = dedup.submit(UserRef("ann"), "other-name.py", code(1), "add", ["cpu"], "ranked")
    assert again.duplicate and not first.duplicate
    assert again.submission_id == first.submission_id and again.jobs == first.jobs
    assert count_submissions(svc) == 1
    # Not a duplicate: forced, another mode, other devices, another user, or after the window.
    assert not dedup.submit(UserRef("ann"), "s.py", code(1), "add", ["cpu"], "ranked", force=True).duplicate
    assert not dedup.submit(UserRef("ann"), "s.py", code(1), "add", ["cpu"], "test").duplicate
    assert not dedup.submit(UserRef("ann"), "s.py", code(1), "add", ["cpu", "H100"], "ranked").duplicate
    assert not dedup.submit(UserRef("bob"), "s.py", code(1), "add", ["cpu"], "ranked").duplicate
    later = LeaderboardService(svc.db, dedup.settings, clock=lambda: svc.clock() + timedelta(seconds=601))
    assert not later.submit(UserRef("ann"), "s.py", code(1), "add", ["cpu"], "ranked").duplicate
    assert count_submissions(svc) == 6


def test_a_failed_or_cancelled_earlier_submission_is_run_again(svc: LeaderboardService) -> None:
    dedup = with_settings(svc, duplicate_window_s=600)
    first = dedup.submit(UserRef("ann"), "s.py", code(1), "add", ["cpu"], "test")
    dedup.cancel(first.submission_id, UserRef("ann"))
    assert not dedup.submit(UserRef("ann"), "s.py", code(1), "add", ["cpu"], "test").duplicate


def test_claims_go_round_robin_between_users_then_by_age(svc: LeaderboardService) -> None:
    for n in range(5):
        submit(svc, "flood", n)
    calm = [submit(svc, "calm", 100), submit(svc, "calm", 101)]
    late = submit(svc, "late", 200)
    queue = JobQueue(svc.db)
    order = []
    for _ in range(8):
        claim = queue.claim("w", lease_s=60)
        assert claim is not None
        order.append(claim.submission_id)
    owners = {sid: user for user, sids in (("calm", calm), ("late", [late])) for sid in sids}
    users = [owners.get(sid, "flood") for sid in order]
    # Every user's first job before anyone's second, then turns by who was served least recently.
    assert users[:3] == ["flood", "calm", "late"]
    assert users[3:5] == ["flood", "calm"]
    assert users[5:] == ["flood"] * 3
    assert order[1] == calm[0] and order[4] == calm[1]  # within a user, oldest first
    assert queue.claim("w", lease_s=60) is None


def test_ids_are_never_reused_after_deletion(svc: LeaderboardService) -> None:
    first = submit(svc, "ann", 1)
    with svc.db.transaction() as s:
        old_job = s.scalar(select(Job.id).where(Job.submission_id == first))
        s.execute(delete(Submission).where(Submission.id == first))
    second = submit(svc, "ann", 2)
    with svc.db.transaction() as s:
        new_job = s.scalar(select(Job.id).where(Job.submission_id == second))
    assert second > first and new_job is not None and old_job is not None and new_job > old_job


def test_a_late_progress_event_of_a_lost_lease_is_dropped(svc: LeaderboardService) -> None:
    submit(svc, "ann", 1)
    queue = JobQueue(svc.db)
    claim = queue.claim("w", lease_s=60)
    assert claim is not None
    assert queue.add_event(claim, "testing", "mine")
    svc.cancel(claim.submission_id, UserRef("ann"))
    assert not queue.add_event(claim, "benchmarking", "too late")
    with svc.db.transaction() as s:
        details = s.scalars(select(JobEvent.detail).where(JobEvent.job_id == claim.job_id)).all()
    assert "mine" in details and "too late" not in details


def test_compile_budget_only_where_there_is_a_compile_step(svc: LeaderboardService, tmp_path: Path) -> None:
    sid = submit(svc, "ann", 1, mode="test")
    with svc.db.transaction() as s:
        job_id = s.scalar(select(Job.id).where(Job.submission_id == sid))
    (planned,) = svc.run_requests(job_id)
    board = load_problem(tmp_path / "add").task.test_timeout_s
    limits = planned.request.limits
    assert limits.compile_timeout_s == 0 and limits.run_timeout_s == board  # Python: the board's limit, nothing more

    folder = write_problem(tmp_path / "cu", "addcu", lang="cu", templates={})
    (folder / "harness.cu").write_text("// the problem's harness: what every submission compiles against\n")
    with (folder / "task.yml").open("a") as task:
        task.write("files: [reference.py, harness.cu]\n")  # a C++ problem lists its harness (problem intake)
    cu = load_problem(folder)
    svc.create_leaderboard(cu, name="addcu", deadline=future(), devices=["H100"])
    receipt = svc.submit(UserRef("ann"), "k.cu", b"// kernel\n", "addcu", ["H100"], "ranked")
    planned_cu = svc.run_requests(receipt.jobs[0].job_id)
    for p in planned_cu:
        lim = p.request.limits
        assert 0 < lim.compile_timeout_s <= svc.settings.compile_budget_s
        assert lim.compile_timeout_s + lim.run_timeout_s == cu.task.ranked_timeout_s  # compile comes out of it
