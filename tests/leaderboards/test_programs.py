"""Programs as first-class users (issue 33), in the core, on SQLite and PostgreSQL: batches (stored at once, each
candidate refused alone, the whole batch refused before anything is stored), GPU-second budgets (spent by the runs'
own times, per account and per token, refused with what is left and when it refills), idempotency keys, and the
reward record against its JSON Schema."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import func, select

from leaderboards.batches import BatchNotFound
from leaderboards.budgets import BudgetExhausted, period_bounds
from leaderboards.errors import (
    DeviceNotAllowed,
    InvalidSubmission,
    NotFound,
    RateLimited,
    SubmissionNotFound,
    UserError,
)
from leaderboards.idempotency import IdempotencyKeyInUse, IdempotencyKeyReused, request_digest
from leaderboards.models import Batch, Job, JobStatus, Submission
from leaderboards.queue import JobQueue
from leaderboards.replay import ReplayNotAllowed, replayed
from leaderboards.results import UserRef
from leaderboards.reward import FLAGS
from leaderboards.service import LeaderboardService
from runners.contract import Mode, Verdict

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / "reward.schema.json").read_text())
BOT = UserRef("bot")


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu", "H100"])
    return service


def code(n: int) -> bytes:
    return f"def custom_kernel(d):  # {n}\n    return d\n".encode()


def stored(svc: LeaderboardService) -> int:
    with svc.db.transaction() as s:
        return int(s.scalar(select(func.count()).select_from(Submission)) or 0)


def finish(svc: LeaderboardService, submission_id: int, verdict: Verdict = Verdict.ACCEPTED) -> None:
    """Store the job's run (2 s of the runner's own time) and end the job, as a worker would."""
    job_id = svc.submission_status_of(submission_id, None, admin=True).jobs[0].job_id
    svc.record_run(job_id, run_result(mode=Mode.BENCHMARK, verdict=verdict))
    with svc.db.transaction() as s:
        job = s.get(Job, job_id)
        assert job is not None
        job.status, job.verdict, job.finished_at = JobStatus.SUCCEEDED.value, verdict.value, svc.clock()


def test_a_batch_stores_its_candidates_and_refuses_a_bad_one_alone(svc: LeaderboardService) -> None:
    earlier = svc.submit(BOT, "k.py", code(0), "add", ["cpu"], "benchmark").submission_id
    svc = LeaderboardService(svc.db, svc.settings.model_copy(update={"duplicate_window_s": 60}), clock=svc.clock)
    files = [("a.py", code(1)), ("b.cu", b"__global__ void k() {}\n"), ("c.py", code(0)), ("", b"")]
    batch = svc.submit_batch(BOT, files, "add", "cpu", "benchmark")
    assert [i.status for i in batch.items] == ["queued", "refused", "queued", "refused"]
    assert batch.items[1].error_code == "wrong_file_type" and "takes" in (batch.items[1].error_message or "")
    assert batch.items[2].submission_id == earlier and batch.items[2].duplicate  # ran a moment ago: not again
    assert batch.items[3].error_field == "file"
    assert stored(svc) == 2 and not batch.done and batch.finished == 2
    assert svc.batch_finished(batch.batch_id) == 2  # what the event stream polls
    assert batch.items[1].reward is not None and batch.items[1].reward["flags"] == ["refused"]

    finish(svc, batch.items[0].submission_id)  # type: ignore[arg-type]
    finish(svc, earlier, verdict=Verdict.WRONG_ANSWER)
    again = svc.batch(batch.batch_id, BOT)
    assert again.done and again.finished == 4
    assert svc.batch_finished(batch.batch_id) == 4
    first, dup = again.items[0].reward, again.items[2].reward
    assert first is not None and dup is not None
    assert first["verdict"] == "accepted" and first["accepted"] and first["correct_fraction"] == 1.0
    assert first["ci_half_width"] is not None and first["ci_half_width"] > 0
    assert dup["verdict"] == "wrong_answer" and not dup["accepted"] and "duplicate" in dup["flags"]
    for item in again.items:
        jsonschema.validate(item.reward, SCHEMA)
    with pytest.raises(BatchNotFound):
        svc.batch(batch.batch_id, UserRef("someone-else"))
    assert svc.batch(batch.batch_id, None, admin=True).batch_id == batch.batch_id


def test_what_concerns_the_whole_batch_refuses_it_before_anything_is_stored(svc: LeaderboardService) -> None:
    with pytest.raises(DeviceNotAllowed):
        svc.submit_batch(BOT, [("a.py", code(1))], "add", "B200", "test")
    with pytest.raises(InvalidSubmission, match="one device"):
        svc.submit_batch(BOT, [("a.py", code(1))], "add", None, "test")
    with pytest.raises(InvalidSubmission, match="compare"):
        svc.submit_batch(BOT, [("a.py", code(1))], "add", "cpu", "compare")
    too_many = [(f"{i}.py", code(i)) for i in range(svc.settings.batch_max_candidates + 1)]
    with pytest.raises(InvalidSubmission, match="at most 64") as exc:
        svc.submit_batch(BOT, too_many, "add", "cpu", "test")
    assert exc.value.code == "batch_too_large"
    limited = LeaderboardService(svc.db, svc.settings.model_copy(update={"rate_limit_per_hour": 3}), clock=svc.clock)
    with pytest.raises(InvalidSubmission, match="A batch of 4 candidates is more than the 3 test") as exc:
        limited.submit_batch(BOT, [(f"{i}.py", code(i)) for i in range(4)], "add", "cpu", "test")
    assert exc.value.code == "batch_over_rate_limit"
    assert stored(svc) == 0
    limited.submit_batch(BOT, [(f"{i}.py", code(i)) for i in range(2)], "add", "cpu", "test")
    with pytest.raises(RateLimited, match="3 test"):
        limited.submit_batch(BOT, [(f"{i}.py", code(i)) for i in range(2, 4)], "add", "cpu", "test")
    assert stored(svc) == 2


def _count_checks(svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose content ``svc`` compiles and fingerprints (then screens): the costly part of a submission."""
    checked: list[str] = []
    real = svc._check_costly

    def spy(name: str, content: bytes, **options: Any) -> None:
        checked.append(name)
        real(name, content, **options)

    monkeypatch.setattr(svc, "_check_costly", spy)
    return checked


def test_a_batch_the_board_or_the_limits_refuse_costs_no_compile(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team, 2026-11-29: every candidate was compiled, fingerprinted and screened before the board, the ban, the
    budget and the hourly limit were looked at (64 files of 1 MiB: minutes of the API's CPU for a 429)."""
    limited = LeaderboardService(svc.db, svc.settings.model_copy(update={"rate_limit_per_hour": 3}), clock=svc.clock)
    checked = _count_checks(limited, monkeypatch)
    with pytest.raises(NotFound):
        limited.submit_batch(BOT, [("a.py", code(1))], "no-such-board", "cpu", "test")
    limited.submit_batch(BOT, [("0.py", code(0)), ("1.py", code(1))], "add", "cpu", "test")
    with pytest.raises(RateLimited):
        limited.submit_batch(BOT, [("2.py", code(2)), ("3.py", code(3))], "add", "cpu", "test")
    with pytest.raises(InvalidSubmission) as exc:  # every file sent needs room, a refused one too
        limited.submit_batch(BOT, [("4.py", code(4)), ("bad.cu", b"x"), ("", b""), ("5.py", code(5))], "add", "cpu",
                             "test")  # fmt: skip
    assert exc.value.code == "batch_over_rate_limit"
    token = limited.create_token(BOT, name="t").info.token_id
    limited.set_budget(token_id=token, seconds=0.0, actor="admin")
    with pytest.raises(BudgetExhausted):
        limited.submit_batch(BOT, [("6.py", code(6))], "add", "cpu", "test", token_id=token)
    assert checked == ["0.py", "1.py"] and stored(svc) == 2
    capped = LeaderboardService(svc.db, svc.settings.model_copy(update={"max_new_files_per_day": 3}), clock=svc.clock)
    checked_capped = _count_checks(capped, monkeypatch)
    with pytest.raises(UserError):  # 2 new files today already: 2 more are over the daily cap of 3
        capped.submit_batch(BOT, [("7.py", code(7)), ("8.py", code(8))], "add", "cpu", "test")
    assert checked_capped == []


def test_a_batch_of_which_no_candidate_can_run_is_refused_whole_and_stores_nothing(svc: LeaderboardService) -> None:
    """Red team, 2026-11-29: a batch of refused candidates skipped the hourly limit and was stored all the same (20
    batches of 64 refused files: 1,280 rows for an account over its limit)."""
    files = [("a.cu", b"__global__ void k() {}\n"), ("b.py", b"def custom_kernel(d:\n"), ("", b"")]
    with pytest.raises(InvalidSubmission) as exc:
        svc.submit_batch(BOT, files, "add", "cpu", "test")
    assert exc.value.code == "no_candidate_can_run" and exc.value.field == "files"
    said = exc.value.message
    assert "None of the 3 candidates" in said and "a.cu" in said and "b.py" in said and "(no name)" in said
    with svc.db.transaction() as s:
        assert int(s.scalar(select(func.count()).select_from(Batch)) or 0) == 0
    assert stored(svc) == 0


def test_a_single_submission_the_limits_refuse_costs_no_compile(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch
) -> None:
    limited = LeaderboardService(svc.db, svc.settings.model_copy(update={"rate_limit_per_hour": 1}), clock=svc.clock)
    checked = _count_checks(limited, monkeypatch)
    limited.submit(BOT, "a.py", code(1), "add", ["cpu"], "test")
    with pytest.raises(RateLimited):
        limited.submit(BOT, "b.py", code(2), "add", ["cpu"], "test")
    with pytest.raises(NotFound):
        limited.submit(BOT, "c.py", code(3), "no-such-board", ["cpu"], "test")
    assert checked == ["a.py"]
    dup = LeaderboardService(svc.db, limited.settings.model_copy(update={"duplicate_window_s": 60}), clock=svc.clock)
    assert dup.submit(BOT, "a.py", code(1), "add", ["cpu"], "test").duplicate  # answered, at the limit as before


def test_a_batch_may_fill_the_pending_quota_up_to_its_own_size(svc: LeaderboardService) -> None:
    small = LeaderboardService(
        svc.db, svc.settings.model_copy(update={"max_pending_jobs_per_user": 2, "batch_max_candidates": 5}),
        clock=svc.clock,
    )  # fmt: skip
    batch = small.submit_batch(BOT, [(f"{i}.py", code(i)) for i in range(5)], "add", "cpu", "test")
    assert all(i.status == "queued" for i in batch.items)
    with pytest.raises(RateLimited, match="5 runs waiting") as exc:
        small.submit_batch(BOT, [("x.py", code(9))], "add", "cpu", "test")
    assert exc.value.code == "pending_quota"


def test_budgets_are_spent_by_run_time_per_account_and_per_token(svc: LeaderboardService) -> None:
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    svc.clock = lambda: now
    a = svc.create_token(BOT, name="a").info.token_id
    b = svc.create_token(BOT, name="b").info.token_id
    svc.set_budget(token_id=a, seconds=3.0, period_s=3600, actor="admin")

    def send(n: int, token: int | None) -> int:
        return svc.submit(BOT, "k.py", code(n), "add", ["cpu"], "test", token_id=token).submission_id

    finish(svc, send(1, a))  # run_result: 2 s of the runner's own time each
    finish(svc, send(2, a))
    (view,) = svc.budgets_of(BOT, a)
    assert view.subject == "token" and view.spent_s >= 4.0 and view.left_s == 0
    with pytest.raises(BudgetExhausted) as exc:
        send(3, a)
    assert "0 s left" in exc.value.message and "refills at 2026-11-28 13:00:00 UTC" in exc.value.message
    assert exc.value.retry_at == datetime(2026, 11, 28, 13, 0, tzinfo=UTC)
    with pytest.raises(BudgetExhausted):
        svc.submit_batch(BOT, [("x.py", code(4))], "add", "cpu", "test", token_id=a)
    send(5, b)  # another token of the account is not bound by a's budget
    svc.set_budget(user=BOT, seconds=100.0, actor="admin")
    assert {v.subject for v in svc.budgets()} == {"account", "token"}
    svc.set_budget(user=BOT, seconds=1.0, actor="admin")
    with pytest.raises(BudgetExhausted, match="Your account's"):
        send(6, b)  # the account's budget binds every token
    assert svc.set_budget(user=BOT, seconds=None, actor="admin") is None
    send(7, b)
    with pytest.raises(UserError, match="period"):
        svc.set_budget(user=BOT, seconds=5.0, period_s=1, actor="admin")


def test_a_period_starts_at_a_multiple_of_its_length() -> None:
    start, end = period_bounds(datetime(2026, 11, 28, 17, 30, tzinfo=UTC), 86_400)
    assert start == datetime(2026, 11, 28, tzinfo=UTC) and end - start == timedelta(days=1)


def test_an_idempotency_key_answers_its_request_once(svc: LeaderboardService) -> None:
    one = request_digest("POST /submissions", {"mode": "test"}, {"file": ("a.py", b"x")})
    other = request_digest("POST /submissions", {"mode": "test"}, {"file": ("a.py", b"y")})
    assert svc.idempotency_begin(BOT, "k1", "POST /submissions", one) is None
    with pytest.raises(IdempotencyKeyInUse):
        svc.idempotency_begin(BOT, "k1", "POST /submissions", one)
    svc.idempotency_finish(BOT, "k1", 202, {"submission_id": 7})
    answer = svc.idempotency_begin(BOT, "k1", "POST /submissions", one)
    assert answer is not None and answer.status_code == 202 and answer.body == {"submission_id": 7}
    with pytest.raises(IdempotencyKeyReused, match="'k1'"):
        svc.idempotency_begin(BOT, "k1", "POST /submissions", other)
    assert svc.idempotency_begin(UserRef("someone-else"), "k1", "POST /submissions", other) is None  # per account
    assert svc.idempotency_begin(BOT, "k2", "POST /batches", one) is None
    svc.idempotency_release(BOT, "k2")  # its request failed: the retry runs
    assert svc.idempotency_begin(BOT, "k2", "POST /batches", one) is None
    later = svc.clock() + timedelta(seconds=svc.settings.idempotency_ttl_s + 1)
    svc.clock = lambda: later
    assert svc.idempotency_begin(BOT, "k1", "POST /submissions", other) is None  # kept for a bounded time
    with pytest.raises(InvalidSubmission):
        svc.idempotency_begin(BOT, " spaced ", "POST /submissions", one)


def test_the_schema_lists_every_flag() -> None:
    assert set(SCHEMA["properties"]["flags"]["items"]["enum"]) == set(FLAGS)


def test_a_replay_times_the_original_inputs_and_never_ranks(svc: LeaderboardService) -> None:
    admin = UserRef("root")
    bench = svc.submit(BOT, "k.py", code(1), "add", ["cpu"], "benchmark").submission_id
    with pytest.raises(InvalidSubmission, match="no finished run"):
        svc.replay(bench, BOT)
    finish(svc, bench)
    with pytest.raises(SubmissionNotFound):
        svc.replay(bench, UserRef("someone-else"))  # not theirs: like a missing one
    again = svc.replay(bench, BOT)
    assert again.mode == "benchmark" and [j.device for j in again.jobs] == ["cpu"]
    report = svc.replay_report(again.submission_id, BOT)
    assert report.replay_of == bench and not report.done and report.holds is None
    finish(svc, again.submission_id)
    report = svc.replay_report(again.submission_id, BOT)
    assert report.done and report.holds and report.devices[0].same_verdict
    assert all(c.within for c in report.devices[0].cases) and len(report.devices[0].cases) == 2
    with pytest.raises(NotFound, match="not a replay"):
        svc.replay_report(bench, BOT)

    ranked = svc.submit(BOT, "k.py", code(2), "add", ["cpu"], "ranked").submission_id
    job = svc.submission_status_of(ranked, BOT).jobs[0].job_id
    svc.record_run(job, run_result())
    svc.record_run(job, run_result(), secret=True)
    assert [e.submission_id for e in svc.ranking("add", "cpu").entries] == [ranked]
    with pytest.raises(ReplayNotAllowed, match="only an admin"):
        svc.replay(ranked, BOT)  # it would re-run the secret-seed inputs
    replay = svc.replay(ranked, admin, admin=True)
    original_requests = svc.run_requests(job)
    replay_requests = svc.run_requests(replay.jobs[0].job_id)
    assert [r.request.seed for r in replay_requests] == [r.request.seed for r in original_requests]
    assert replay_requests[1].request.seed is not None  # the secret-seed run: the original's inputs
    fresh = svc.submit(BOT, "k.py", code(3), "add", ["cpu"], "ranked")
    assert svc.run_requests(fresh.jobs[0].job_id)[1].request.seed != replay_requests[1].request.seed
    svc.record_run(replay.jobs[0].job_id, run_result([1.0, 1.0]))  # far faster: it still must not rank
    svc.record_run(replay.jobs[0].job_id, run_result([1.0, 1.0]), secret=True)
    assert [e.submission_id for e in svc.ranking("add", "cpu").entries] == [ranked]
    svc.rebuild_rankings("add")
    assert [e.submission_id for e in svc.ranking("add", "cpu").entries] == [ranked]
    assert svc.replay(replay.submission_id, admin, admin=True).submission_id  # a replay of a replay: the original
    with svc.db.transaction() as s:
        assert replayed(s, replay.submission_id + 2) == ranked


def test_a_program_leaves_its_reserve_of_a_devices_workers_idle_for_people(svc: LeaderboardService) -> None:
    queue = JobQueue(svc.db, clock=svc.clock)  # the default: two of four workers kept idle for people
    for i in range(4):
        queue.register_worker(f"w{i}", ["H100"])
    svc.create_token(BOT, program=True)
    programs = {svc.submit(BOT, "k.py", code(i), "add", ["H100"], "test").jobs[0].job_id for i in range(5)}
    ann = svc.submit(UserRef("ann"), "k.py", code(8), "add", ["H100"], "test").jobs[0].job_id
    first, second, third = (queue.claim(f"w{i}", lease_s=60, devices=["H100"]) for i in range(3))
    assert first is not None and first.job_id in programs  # nobody served yet: the oldest job
    assert second is not None and second.job_id == ann  # then round-robin: ann, whose job counts as running too
    assert third is None  # two run: the other two stay idle for people
    bob = svc.submit(UserRef("bob"), "k.py", code(9), "add", ["H100"], "test").jobs[0].job_id
    claim = queue.claim("w2", lease_s=60, devices=["H100"])
    assert claim is not None and claim.job_id == bob
    unlaned = JobQueue(svc.db, clock=svc.clock, program_reserve_share=0.0).claim("w3", lease_s=60, devices=["H100"])
    assert unlaned is not None and unlaned.job_id in programs
    with svc.db.transaction() as s:  # the default: half kept idle (rounded up), never every worker
        assert JobQueue(svc.db, clock=svc.clock, program_reserve_share=0.25).program_lane(s, "H100", svc.clock()) == 3
        assert JobQueue(svc.db, clock=svc.clock).program_lane(s, "cpu", svc.clock()) == 1  # no worker: one


def test_correct_fraction_counts_test_and_benchmark_cases_so_an_accepted_benchmark_run_reads_one() -> None:
    """Version 1 of the reward record counted test cases only: an accepted benchmark-mode run, which runs none,
    read 0.0 and a learning loop shaped on it punished correct kernels (newcomer walk, 2026-11-29)."""
    from leaderboards.reward import REWARD_VERSION, correct_fraction
    from runners.contract import BenchmarkResult, Mode, RunResult, TestResult, Verdict

    def bench(i: int, verdict: Verdict) -> BenchmarkResult:
        return BenchmarkResult(index=i, case={"n": i}, verdict=verdict)

    ok, wrong = Verdict.ACCEPTED, Verdict.WRONG_ANSWER
    benchmark_run = RunResult(verdict=ok, mode=Mode.BENCHMARK, benchmarks=[bench(i, ok) for i in range(3)])
    assert REWARD_VERSION == 2 and correct_fraction(benchmark_run) == 1.0
    one_wrong = RunResult(verdict=wrong, mode=Mode.BENCHMARK, benchmarks=[bench(0, ok), bench(1, wrong)])
    assert correct_fraction(one_wrong) == 0.5
    ranked = RunResult(verdict=wrong, mode=Mode.RANKED, tests=[TestResult(index=0, case={}, verdict=ok)],
                       benchmarks=[bench(0, ok), bench(1, ok), bench(2, wrong)])  # fmt: skip
    assert correct_fraction(ranked) == 0.75
    assert correct_fraction(RunResult(verdict=Verdict.COMPILE_ERROR, mode=Mode.BENCHMARK)) == 0.0
    assert correct_fraction(None) == 0.0


def test_a_replay_is_screened_as_a_submission_is(
    svc: LeaderboardService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team, 2026-11-29: a replay queued the stored file again without asking the screening hook, so a file the
    operator's hook refuses now (a new rule, or a hook that was down when it came) ran again on the runners."""
    bench = svc.submit(BOT, "k.py", code(1), "add", ["cpu"], "benchmark").submission_id
    finish(svc, bench)
    hook = tmp_path / "hook.py"
    hook.write_text("import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'verdict': 'refuse', 'reason': 'x'}))\n")
    screened = LeaderboardService(
        svc.db, svc.settings.model_copy(update={"screen_command": f"{sys.executable} {hook}"}), clock=svc.clock
    )
    with pytest.raises(InvalidSubmission) as exc:
        screened.replay(bench, BOT)
    assert exc.value.code == "refused_by_screening"
    assert stored(svc) == 1
    limited = LeaderboardService(
        svc.db, screened.settings.model_copy(update={"rate_limit_per_hour": 1}), clock=svc.clock
    )  # over its limit (the benchmark run): refused by the limit before the hook is asked
    with pytest.raises(RateLimited):
        limited.replay(bench, BOT)
