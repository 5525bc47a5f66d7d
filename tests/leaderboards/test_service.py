"""The service as a competitor meets it: every mistake answered with a message that says what to do, nothing
stored for a refused submission, and no secret ever in an answer."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import func, select

from leaderboards.errors import (
    Banned,
    DeviceNotAllowed,
    InvalidChange,
    InvalidSubmission,
    LeaderboardClosed,
    LeaderboardNotFound,
    LeaderboardPaused,
    LeaseLost,
    NotFound,
    RateLimited,
    SubmissionNotFound,
    UserError,
)
from leaderboards.models import Job, JobStatus, Leaderboard, Submission, SubmissionCode
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import SPEED_OF_LIGHT, Mode, Verdict

CODE = b"def custom_kernel(data):\n    return data\n"
ALICE = UserRef("alice", discord_id=2**62 + 12345)


@pytest.fixture
def board(service: LeaderboardService, tmp_path: Path) -> str:
    service.create_leaderboard(make_problem(tmp_path), deadline=future(), devices=["cpu", "H100"])
    return "add"


def count(service: LeaderboardService, model: type) -> int:
    with service.db.transaction() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def test_submit_queues_one_job_per_device_and_stores_code_once(service: LeaderboardService, board: str) -> None:
    r = service.submit(ALICE, "sub.py", CODE, board, ["cpu", "h100", "cpu"], "benchmark")
    assert [j.device for j in r.jobs] == ["cpu", "H100"]  # names match case-insensitively, duplicates dropped
    assert [j.queue_position for j in r.jobs] == [1, 1]
    r2 = service.submit(UserRef("bob"), "other.py", CODE, board, ["cpu"])
    assert r2.jobs[0].queue_position == 2
    assert count(service, SubmissionCode) == 1 and count(service, Submission) == 2
    status = service.submission_status(r.submission_id)
    assert [j.status for j in status.jobs] == ["queued", "queued"] and status.jobs[0].events[0].phase == "queued"
    assert status.user_name == "alice" and status.mode == "benchmark" and not status.done


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"leaderboard": "nope"}, LeaderboardNotFound, ["'nope'", "Known leaderboards: add"]),
        ({"leaderboard": "ADX"}, LeaderboardNotFound, ["'ADX'", "Did you mean 'add'?", "Known leaderboards: add"]),
        ({"devices": ["A100"]}, DeviceNotAllowed, ["'A100'", "cpu, H100"]),
        ({"devices": None}, DeviceNotAllowed, ["Name a device", "-d/--device NAME", "cpu, H100"]),
        ({"file_name": "kernel.cu"}, InvalidSubmission, ["Python files (.py)", "'kernel.cu'"]),
        ({"file_name": "../.."}, InvalidSubmission, ["not a usable file name"]),
        ({"content": b"   \n"}, InvalidSubmission, ["sub.py is empty"]),
        ({"content": b"x = '\xff\xfe'"}, InvalidSubmission, ["not UTF-8"]),
        ({"content": b"#" * (1024 * 1024 + 1)}, InvalidSubmission, ["1,048,577 bytes", "limit is 1,048,576 bytes"]),
        ({"mode": "fastest"}, InvalidSubmission, ["Unknown mode 'fastest'", "test, benchmark, ranked, profile"]),
    ],
)
def test_mistakes_are_refused_with_a_message_and_nothing_is_stored(
    service: LeaderboardService, board: str, kwargs: dict, error: type[UserError], words: list[str]
) -> None:
    args = {"user": ALICE, "file_name": "sub.py", "content": CODE, "leaderboard": board, "devices": ["cpu"]}
    with pytest.raises(error) as exc:
        service.submit(**(args | kwargs))
    for w in words:
        assert w in str(exc.value)
    assert count(service, Submission) == 0 and count(service, Job) == 0


def test_closed_leaderboard_says_when_it_closed(
    service: LeaderboardService, settings: CoreSettings, tmp_path: Path
) -> None:
    settings.late_submissions_per_hour = 0  # no practice after the deadline (test_late_and_invites.py has it)
    closed = datetime(2024, 3, 1, 12, 30, tzinfo=UTC)
    service.create_leaderboard(make_problem(tmp_path), deadline=closed, devices=["cpu"])
    with pytest.raises(LeaderboardClosed, match="closed on 2024-03-01 12:30 UTC"):
        service.submit(ALICE, "sub.py", CODE, "add")
    assert service.list_leaderboards()[0].is_open is False


def test_paused_leaderboard_refuses_until_resumed(service: LeaderboardService, board: str) -> None:
    service.pause(board, actor="admin")
    with pytest.raises(LeaderboardPaused, match="paused"):
        service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    service.resume(board, actor="admin")
    assert service.submit(ALICE, "sub.py", CODE, board, ["cpu"]).submission_id


def test_hidden_leaderboards_are_not_listed_nor_open(service: LeaderboardService, board: str) -> None:
    service.update_leaderboard(board, visible=False, actor="admin")
    assert service.list_leaderboards() == () and len(service.list_leaderboards(include_hidden=True)) == 1
    with pytest.raises(LeaderboardNotFound):
        service.submit(ALICE, "sub.py", CODE, board, ["cpu"])


def test_rate_limit_per_leaderboard_says_when_to_retry(service: LeaderboardService, board: str) -> None:
    start = (datetime.now(UTC) + timedelta(days=1)).replace(hour=10, minute=0, second=0, microsecond=0)
    now = [start]
    service.clock = lambda: now[0]
    service.set_rate_limit(board, 2, actor="admin")
    service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    now[0] += timedelta(minutes=10)
    service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    with pytest.raises(RateLimited, match=r"2 times per hour.*after 11:00:00 UTC") as exc:
        service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    assert exc.value.retry_at == start + timedelta(hours=1)
    service.submit(UserRef("bob"), "sub.py", CODE, board, ["cpu"])  # per user
    now[0] += timedelta(minutes=51)
    service.submit(ALICE, "sub.py", CODE, board, ["cpu"])  # the first one left the window


def test_pending_jobs_per_user_are_capped(service: LeaderboardService, board: str) -> None:
    service.settings = service.settings.model_copy(update={"max_pending_jobs_per_user": 3})
    service.submit(ALICE, "sub.py", CODE, board, ["cpu", "H100"])
    with pytest.raises(RateLimited, match="2 runs waiting or running"):
        service.submit(ALICE, "sub.py", CODE, board, ["cpu", "H100"])


def test_banned_users_cannot_submit(service: LeaderboardService, board: str) -> None:
    service.ban_user(ALICE, reason="sharing secret inputs", actor="admin")
    with pytest.raises(Banned, match=r"banned.*sharing secret inputs"):
        service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    service.unban_user(ALICE, actor="admin")
    service.submit(ALICE, "sub.py", CODE, board, ["cpu"])


def test_discord_names_update_and_snowflakes_round_trip(service: LeaderboardService, board: str) -> None:
    service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    renamed = UserRef("alice-new-name", discord_id=ALICE.discord_id)
    r = service.submit(renamed, "sub.py", CODE, board, ["cpu"])
    assert r.user_name == "alice-new-name"
    view = service.user(renamed)
    assert view.discord_id == 2**62 + 12345 and view.identity == f"discord:{2**62 + 12345}"


def test_cancel_is_for_the_owner_and_a_cancelled_job_stores_no_result(service: LeaderboardService, board: str) -> None:
    r = service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    with pytest.raises(SubmissionNotFound, match="no submission #1 of yours"):  # like a missing one: ids leak nothing
        service.cancel(r.submission_id, UserRef("mallory"))
    status = service.cancel(r.submission_id, ALICE)
    assert status.jobs[0].status == "cancelled" and status.done
    with pytest.raises(LeaseLost):
        service.record_run(r.jobs[0].job_id, run_result(), owner="worker-1")
    with pytest.raises(InvalidChange, match="nothing to cancel"):
        service.cancel(r.submission_id, ALICE)


def test_record_run_checks_the_lease_and_stores_one_result_per_kind(service: LeaderboardService, board: str) -> None:
    r = service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    job_id = r.jobs[0].job_id
    with service.db.transaction() as s:
        job = s.get(Job, job_id)
        assert job is not None
        job.status, job.lease_owner = JobStatus.RUNNING.value, "worker-1"
    with pytest.raises(LeaseLost):
        service.record_run(job_id, run_result(), owner="worker-2")
    first = service.record_run(job_id, run_result([10.0, 10.0]), owner="worker-1")
    again = service.record_run(job_id, run_result([99.0, 99.0]), owner="worker-1")
    assert first.created and not again.created and again.run_id == first.run_id
    assert again.score_ns == pytest.approx(10.0)
    secret = service.record_run(job_id, run_result([12.0, 12.0]), secret=True, owner="worker-1")
    assert secret.created and secret.score_ns is None  # a secret run's timing is not handed out
    assert secret.eligible and secret.rank == 1


def test_record_run_joins_the_callers_transaction(service: LeaderboardService, board: str) -> None:
    r = service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    with pytest.raises(RuntimeError), service.db.transaction() as s:
        service.record_run(r.jobs[0].job_id, run_result(), session=s)
        raise RuntimeError("the caller's transaction fails after recording")
    assert service.submission_status(r.submission_id).jobs[0].public_passed is None  # rolled back with it


def test_run_requests_public_and_secret_from_the_snapshot(
    service: LeaderboardService, board: str, tmp_path: Path
) -> None:
    shutil.rmtree(tmp_path / "add")  # the leaderboard keeps its own copy of the problem
    r1 = service.submit(ALICE, "sub.py", CODE, board, ["cpu", "H100"])
    r2 = service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    public, secret = service.run_requests(r1.jobs[0].job_id)
    assert (public.secret, public.request.seed) == (False, None)
    assert secret.secret and isinstance(secret.request.seed, int)
    assert public.request.mode is Mode.RANKED and public.request.device == "cpu"
    assert public.request.submission.content == CODE and "reference.py" in public.request.files
    gpu_public, gpu_secret = service.run_requests(r1.jobs[1].job_id)
    assert gpu_public.request.device == "cuda" and gpu_public.request.device_name == "H100"
    (_, other_secret) = service.run_requests(r2.jobs[0].job_id)
    assert len({secret.request.seed, gpu_secret.request.seed, other_secret.request.seed}) == 3  # fresh per run
    service.record_run(r1.jobs[0].job_id, run_result())
    assert [p.recorded for p in service.run_requests(r1.jobs[0].job_id)] == [True, False]
    test_mode = service.submit(ALICE, "sub.py", CODE, board, ["cpu"], Mode.TEST)
    (only,) = service.run_requests(test_mode.jobs[0].job_id)
    assert only.request.mode is Mode.TEST and only.request.seed is None
    with pytest.raises(NotFound):
        service.run_requests(10**9)


def _walk(value: object) -> list[object]:
    """Every leaf value inside a service answer."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [leaf for f in dataclasses.fields(value) for leaf in _walk(getattr(value, f.name))]
    if hasattr(value, "model_dump"):
        return _walk(value.model_dump())  # type: ignore[union-attr]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in (*_walk(k), *_walk(v))]
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _walk(v)]
    return [value]


def test_secret_seed_and_secret_results_never_leave_the_service(service: LeaderboardService, board: str) -> None:
    r = service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    job_id = r.jobs[0].job_id
    service.record_run(job_id, run_result([10.0, 10.0], message="public run message"))
    secret_result = run_result([77777.0, 77777.0], verdict=Verdict.WRONG_ANSWER, message="SECRET-MISMATCH at 3")
    service.record_run(job_id, secret_result, secret=True)
    with service.db.transaction() as s:
        seed = s.scalar(select(Leaderboard.secret_seed))
    _, planned_secret = service.run_requests(job_id)
    answers = [
        service.submission_status(r.submission_id),
        service.submission_details(r.submission_id, ALICE),
        service.user_submissions(ALICE),
        service.list_leaderboards(),
        service.leaderboard(board),
        service.task(board),
        service.ranking(board, "cpu"),
        service.queue_stats(),
        service.usage_stats(),
    ]
    leaves = [leaf for a in answers for leaf in _walk(a)]
    assert seed not in leaves and planned_secret.request.seed not in leaves
    assert not any("SECRET-MISMATCH" in str(leaf) for leaf in leaves)
    assert not any(leaf == pytest.approx(77777.0) for leaf in leaves if isinstance(leaf, float))
    details = service.submission_details(r.submission_id, ALICE)
    assert details.code == CODE.decode() and [x.result.message for x in details.results] == ["public run message"]
    assert details.status.jobs[0].secret_passed is False  # the one thing said about the secret run


def test_details_are_for_the_owner_only(service: LeaderboardService, board: str) -> None:
    r = service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    with pytest.raises(SubmissionNotFound, match="of yours"):
        service.submission_details(r.submission_id, UserRef("alice"))  # same name, other identity
    assert service.submission_details(r.submission_id, None, admin=True).code == CODE.decode()
    service.delete_submission(r.submission_id, user=ALICE)
    with pytest.raises(SubmissionNotFound):
        service.submission_details(r.submission_id, ALICE)
    assert service.user_submissions(ALICE) == ()


def test_task_and_templates(service: LeaderboardService, board: str) -> None:
    task = service.task(board)
    assert task.description == "Add two vectors." and task.devices == ("cpu", "H100") and task.lang == "py"
    assert task.template_files == {"pytorch": "add_pytorch.py"} and "custom_kernel" in task.templates["pytorch"]
    assert task.templates["pytorch"].startswith("#!POPCORN leaderboard add\n")  # served: a copy submits to its board
    assert task.tests == ({"size": 3, "seed": 1},) and len(task.benchmarks) == 2
    tpl = service.template(board, "pytorch")
    assert tpl.file_name == "add_pytorch.py" and tpl.content == task.templates["pytorch"]
    with pytest.raises(NotFound, match="no 'triton' template; it offers: pytorch"):
        service.template(board, "triton")


def test_admin_create_update_delete(service: LeaderboardService, board: str, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="already exists"):
        service.create_leaderboard(make_problem(tmp_path / "again"), deadline=future(), devices=["cpu"])
    with pytest.raises(InvalidChange, match="time zone"):
        service.update_leaderboard(board, deadline=datetime(2030, 1, 1))
    with pytest.raises(InvalidChange, match=r"description has a control character \(U\+001B\)"):
        service.update_leaderboard(board, description="new \x1b[2J words")  # the rule problem files follow
    with pytest.raises(InvalidChange, match="description is 8,193 characters; text is at most 8,192"):
        service.update_leaderboard(board, description="![" * 4096 + "!")  # every page view renders it
    with pytest.raises(InvalidChange, match=r"bidirectional control \(U\+202E\)"):
        service.create_leaderboard(
            make_problem(tmp_path / "other"), name="other", deadline=future(), devices=["cpu"], description="\u202e"
        )
    update = service.update_leaderboard(board, deadline=future(60), devices=["cpu"], description="new words")
    assert set(update.changed) == {"deadline", "devices", "description"} and not update.ranking_reset
    assert service.update_leaderboard(board, devices=["cpu"]).changed == ()
    r = service.submit(ALICE, "sub.py", CODE, board, ["cpu"])
    service.record_run(r.jobs[0].job_id, run_result())
    service.delete_leaderboard(board, actor="admin")
    assert service.list_leaderboards(include_hidden=True) == ()
    assert count(service, Submission) == 0 and count(service, Job) == 0  # cascaded


def test_queue_and_usage_stats(service: LeaderboardService, board: str) -> None:
    service.submit(ALICE, "a.py", CODE, board, ["cpu", "H100"])
    r = service.submit(UserRef("bob"), "b.py", CODE + b"#", board, ["cpu"], "test")
    service.record_run(r.jobs[0].job_id, run_result(mode=Mode.TEST))
    stats = service.queue_stats()
    assert stats.jobs == {"cpu": {"queued": 2}, "H100": {"queued": 1}} and stats.oldest_queued_at is not None
    usage = service.usage_stats()
    assert usage.submissions == 2 and usage.users == 2 and usage.by_mode == {"ranked": 1, "test": 1}
    assert usage.runs_seconds == pytest.approx(2.0, abs=0.1)
    assert service.usage_stats(since=datetime.now(UTC) + timedelta(hours=1)).submissions == 0
    assert usage.impossible_runs == 0 and usage.impossible_latest == ()


def test_usage_stats_show_admins_the_speed_of_light_rejections(service: LeaderboardService, board: str) -> None:
    """Issue 9: a score faster than the device can be is never ranked, and admins see it in the stats."""
    impossible = run_result(verdict=Verdict.REJECTED, message="benchmark 1: a median of 0.001 µs is faster than the")
    impossible = impossible.model_copy(update={"rejection": SPEED_OF_LIGHT})
    other = run_result(verdict=Verdict.REJECTED, message="refused: the file imports ctypes")
    r1 = service.submit(ALICE, "a.py", CODE, board, ["cpu"])
    service.record_run(r1.jobs[0].job_id, run_result())
    service.record_run(r1.jobs[0].job_id, impossible, secret=True)
    r2 = service.submit(UserRef("bob"), "b.py", CODE + b"#", board, ["cpu"])
    service.record_run(r2.jobs[0].job_id, impossible)
    r3 = service.submit(UserRef("carol"), "c.py", CODE + b"##", board, ["cpu"])
    service.record_run(r3.jobs[0].job_id, other)
    usage = service.usage_stats()
    assert usage.impossible_runs == 2
    newest, oldest = usage.impossible_latest
    assert (newest.submission_id, newest.user_name, newest.secret) == (r2.submission_id, "bob", False)
    assert "faster than" in newest.message and newest.leaderboard == board and newest.device == "cpu"
    assert (oldest.submission_id, oldest.secret, oldest.message) == (r1.submission_id, True, "")  # no secret timings
    assert service.ranking(board, "cpu").entries == ()
    assert service.usage_stats(since=datetime.now(UTC) + timedelta(hours=1)).impossible_runs == 0


def test_a_cutlass_leaderboard_takes_cu_files_and_says_its_language(service: LeaderboardService) -> None:
    from leaderboards.problems import load_problem

    folder = Path(__file__).resolve().parents[2] / "problems" / "matmul_cutlass"
    service.create_leaderboard(load_problem(folder), deadline=future(), devices=["H100"])
    task = service.task("matmul_cutlass")
    assert task.lang == "cutlass" and task.language == "CUTLASS / CuTe C++ (CUDA): .cu, .cuh files"
    source = (folder / "templates" / "cutlass.cu").read_bytes()
    assert service.submit(ALICE, "gemm.cu", source, "matmul_cutlass", ["H100"], "test").submission_id
    with pytest.raises(InvalidSubmission, match=r"takes CUTLASS files \(\.cu, \.cuh\)"):
        service.submit(ALICE, "gemm.py", CODE, "matmul_cutlass", ["H100"], "test")


def test_a_python_problem_as_a_helion_leaderboard_says_its_language_and_offers_its_template(
    service: LeaderboardService,
) -> None:
    from leaderboards.problems import load_problem
    from leaderboards.snapshot import problem_from_snapshot
    from runners.contract import Language

    folder = Path(__file__).resolve().parents[2] / "problems" / "softmax"
    problem = load_problem(folder).in_language(Language.HELION)
    service.create_leaderboard(problem, name="softmax_helion", deadline=future(), devices=["H100"])
    task = service.task("softmax_helion")
    assert task.lang == "helion" and task.language == "Helion (Python DSL over Triton): .py files"
    assert set(task.templates) == {"helion"}, "a DSL leaderboard offers the problem's template in that language"
    stored = problem_from_snapshot(problem.snapshot())  # what the worker builds each run's request from
    assert stored.request("s.py", CODE, Mode.TEST, device="cuda").lang is Language.HELION
    assert service.submit(ALICE, "s.py", CODE, "softmax_helion", ["H100"], "test").submission_id
    with pytest.raises(InvalidSubmission, match=r"takes Helion files \(\.py\)"):
        service.submit(ALICE, "s.cu", CODE, "softmax_helion", ["H100"], "test")
