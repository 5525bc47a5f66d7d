"""Compare as a mode of the service (issue 16), on SQLite and PostgreSQL: two files, one device, one job through the
queue; the worker interleaves benchmark runs (A B, then B A, …) and stores the ratio with its interval; limits count
a compare as 2 runs per round; identical files run; nothing is ranked."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import OnlyWhatTheWorkerUses, future, make_problem
from sqlalchemy import func, select

from leaderboards.errors import InvalidSubmission, LeaseLost, RateLimited
from leaderboards.models import BestScore, Job, JobEvent, JobStatus, Run
from leaderboards.queue import JobQueue
from leaderboards.results import SubmissionMode, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult, Verdict
from runners.launchers.base import LauncherError
from runners.launchers.fake import FakeLauncher, accepted_result

FAST = WorkerSettings(
    _env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.01, backoff_base_s=0, backoff_max_s=0, stop_grace_s=0.5
)
ANN = UserRef("ann")
FAST_PY = b"def custom_kernel(d):  # fast\n    return d\n"
SLOW_PY = b"def custom_kernel(d):  # slow\n    return d\n"


def timed(request: RunRequest, jitter: itertools.count[int] | None = None) -> RunResult:
    """The fast file runs at 900 ns, anything else at 1000 ns, each run a little off (so rounds differ)."""
    wobble = 1.0 + 0.002 * ((next(jitter) % 5) - 2) if jitter is not None else 1.0
    median = (900.0 if b"# fast" in request.submission.content else 1000.0) * wobble
    return accepted_result(request, median)


def launcher(**kw: Any) -> FakeLauncher:
    jitter = itertools.count()
    return FakeLauncher(lambda r: timed(r, jitter), remote_refs=False, **kw)


def serve(svc: LeaderboardService, fake: FakeLauncher, settings: WorkerSettings = FAST) -> Worker:
    w = Worker(svc, lambda _device: fake, settings)
    asyncio.run(asyncio.wait_for(w.run(once=True), 60))
    return w


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu", "H100"])
    return service


def test_a_compare_runs_interleaved_rounds_and_stores_the_ratio(svc: LeaderboardService) -> None:
    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "H100", rounds=4)
    assert receipt.mode is SubmissionMode.COMPARE and [j.device for j in receipt.jobs] == ["H100"]
    queued = svc.submission_status(receipt.submission_id)
    assert queued.comparison is not None and queued.comparison.result is None
    assert (queued.comparison.file_a, queued.comparison.file_b, queued.comparison.rounds) == ("fast.py", "slow.py", 4)

    fake = launcher()
    serve(svc, fake)
    # 4 rounds, 2 runs each, the order alternating: A B, B A, A B, B A; every run a benchmark run with no baselines.
    names = [r.submission.name for r in fake.requests]
    assert names == ["fast.py", "slow.py", "slow.py", "fast.py", "fast.py", "slow.py", "slow.py", "fast.py"]
    assert all(r.mode is Mode.BENCHMARK and r.baselines == [] for r in fake.requests)
    assert len({r.seed for r in fake.requests}) == 1  # fresh inputs, the same for both files: no answer from a cache
    assert len({r.nonce for r in fake.requests}) == 2  # one per file, neither a ranked run's

    status = svc.submission_status(receipt.submission_id)
    assert status.done and status.accepted and status.mode == "compare"
    result = status.comparison.result if status.comparison else None
    assert result is not None and result.verdict is Verdict.ACCEPTED and result.rounds == 4
    assert result.ratio is not None and result.ci_low is not None and result.ci_high is not None
    assert result.ci_low < result.ratio < result.ci_high < 1.0 and result.ratio == pytest.approx(0.9, abs=0.01)
    assert [c.index for c in result.cases] == list(range(len(fake.requests[0].benchmarks)))
    assert "fast.py is faster by" in result.message
    job = status.jobs[0]
    assert job.verdict is Verdict.ACCEPTED and job.score_ns is None and job.rank is None
    details = [e.detail for e in job.events if e.phase == "round"]
    assert details == [f"round {k} of 4 ({'fast.py' if k % 2 else 'slow.py'} first)" for k in (1, 2, 3, 4)]
    done = [e.detail for e in job.events if e.phase == "done"]
    assert done and "fast.py/slow.py time ratio 0.9" in done[0]
    with svc.db.transaction() as s:  # nothing ranked, no run rows: a compare is not a submission to rank
        assert s.scalar(select(func.count()).select_from(Run)) == 0
        assert s.scalar(select(func.count()).select_from(BestScore)) == 0


def test_a_compare_stops_early_once_the_ratio_is_settled(svc: LeaderboardService) -> None:
    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "H100", rounds=12)
    fake = launcher()  # runs within ±0.4% of each other: 6 rounds know the ratio within ±0.4%
    serve(svc, fake)
    assert len(fake.requests) == 2 * 6
    status = svc.submission_status(receipt.submission_id)
    assert status.comparison is not None and status.comparison.rounds == 12  # asked for (and charged)
    result = status.comparison.result
    assert result is not None and result.rounds == 6 and result.ratio == pytest.approx(0.9, abs=0.01)
    details = [e.detail for e in status.jobs[0].events if e.phase == "round"]
    assert details[0] == "round 1 of at most 12 (fast.py first)" and len(details) == 6


def test_the_default_rounds_are_14_on_a_gpu_and_6_on_the_cpu(svc: LeaderboardService) -> None:
    gpu = svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "H100")
    cpu = svc.compare(ANN, "c.py", FAST_PY + b"#c\n", "d.py", SLOW_PY, "add", "cpu")
    rounds = [svc.submission_status(r.submission_id).comparison for r in (gpu, cpu)]
    assert [c.rounds if c else None for c in rounds] == [14, 6]


def test_a_file_compared_with_itself_runs_every_time(svc: LeaderboardService, settings: CoreSettings) -> None:
    settings.duplicate_window_s = 600  # the service de-duplicates identical submissions; a compare is never one
    first = svc.compare(ANN, "k.py", FAST_PY, "k.py", FAST_PY, "add", "cpu", rounds=2)
    again = svc.compare(ANN, "k.py", FAST_PY, "k.py", FAST_PY, "add", "cpu", rounds=2)
    plain = svc.submit(ANN, "k.py", FAST_PY, "add", ["cpu"], "benchmark")
    assert len({first.submission_id, again.submission_id, plain.submission_id}) == 3
    assert not (first.duplicate or again.duplicate or plain.duplicate)
    fake = launcher()
    serve(svc, fake)
    assert len(fake.requests) == 2 * 2 + 2 * 2 + 1
    result = svc.submission_status(first.submission_id).comparison
    assert result is not None and result.result is not None
    c = result.result
    assert c.ratio is not None and c.ci_low is not None and c.ci_high is not None
    assert c.ci_low <= 1.0 <= c.ci_high and "no difference can be told from the noise" in c.message
    # The benchmark submission of the same file is de-duplicated against itself, never against a compare.
    assert svc.submit(ANN, "k.py", FAST_PY, "add", ["cpu"], "benchmark").submission_id == plain.submission_id


def test_a_failing_file_ends_the_compare_with_its_verdict_naming_it(svc: LeaderboardService) -> None:
    def respond(request: RunRequest) -> RunResult:
        if b"# slow" in request.submission.content:
            return RunResult(verdict=Verdict.COMPILE_ERROR, mode=request.mode, message="error: ';' expected")
        return accepted_result(request)

    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "cpu")
    fake = FakeLauncher(respond, remote_refs=False)
    serve(svc, fake)
    assert len(fake.requests) == 2  # round 1: A passed, B failed; nothing more runs
    status = svc.submission_status(receipt.submission_id)
    assert status.done and not status.accepted and status.jobs[0].status is JobStatus.SUCCEEDED
    assert status.jobs[0].verdict is Verdict.COMPILE_ERROR
    c = status.comparison.result if status.comparison else None
    assert c is not None and c.ratio is None and c.message.startswith("slow.py: ") and "';' expected" in c.message


def test_an_infrastructure_failure_retries_the_whole_compare_from_round_one(svc: LeaderboardService) -> None:
    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "cpu", rounds=2)
    fake = launcher(errors=[None, None, LauncherError("the GPU fell off the bus")])  # round 2's first run fails
    serve(svc, fake)
    first_try, second_try = ["fast.py", "slow.py", "slow.py"], ["fast.py", "slow.py", "slow.py", "fast.py"]
    assert [r.submission.name for r in fake.requests] == [*first_try, *second_try]
    status = svc.submission_status(receipt.submission_id)
    assert status.accepted and status.jobs[0].attempts == 2
    assert any(e.phase == "retrying" and "fell off the bus" in e.detail for e in status.jobs[0].events)
    c = status.comparison.result if status.comparison else None
    assert c is not None and c.rounds == 2 and c.ratio == pytest.approx(0.9, abs=0.01)


def test_a_compare_whose_lease_was_lost_stores_nothing(svc: LeaderboardService) -> None:
    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "cpu", rounds=2)
    queue = JobQueue(svc.db)
    claim = queue.claim("w1", lease_s=30)
    assert claim is not None
    comparison = accepted_comparison()
    svc.cancel(receipt.submission_id, ANN)
    with pytest.raises(LeaseLost, match="no longer held"):
        svc.record_comparison(claim.job_id, comparison, owner=claim.owner)
    assert svc.submission_status(receipt.submission_id).comparison.result is None  # type: ignore[union-attr]


def accepted_comparison() -> Any:
    from runners.contract import Comparison

    return Comparison(a="fast.py", b="slow.py", rounds=2, verdict=Verdict.ACCEPTED, ratio=0.9, ci_low=0.8, ci_high=1.0)


@pytest.mark.parametrize(
    ("kwargs", "code", "words"),
    [
        ({"rounds": 3}, "bad_rounds", "even number of rounds from 2 to 20"),
        ({"rounds": 22}, "bad_rounds", "not 22"),
        ({"rounds": 0}, "bad_rounds", "the default is 14 on a GPU, 6 on the CPU"),
        ({"device": None}, "one_device", "name one of cpu, H100 as `device` (on the command line, --device cpu)"),
        ({"device": "all"}, "one_device", "one device"),
        ({"file_b": "b.cu"}, "wrong_file_type", "'b.cu' is not one"),
        ({"content_b": b"  \n"}, "empty_file", "b.py is empty"),
    ],
)
def test_compare_mistakes_are_named(svc: LeaderboardService, kwargs: dict[str, Any], code: str, words: str) -> None:
    args: dict[str, Any] = {"file_b": "b.py", "content_b": SLOW_PY, "device": "cpu", "rounds": 6, **kwargs}
    with pytest.raises(InvalidSubmission) as exc:
        svc.compare(ANN, "a.py", FAST_PY, args["file_b"], args["content_b"], "add", args["device"], args["rounds"])
    assert exc.value.code == code and words in exc.value.message, exc.value.message
    if code == "empty_file":
        assert exc.value.field == "against"


def test_a_one_file_submit_in_mode_compare_says_to_send_two(svc: LeaderboardService) -> None:
    with pytest.raises(InvalidSubmission, match="takes two files") as exc:
        svc.submit(ANN, "a.py", FAST_PY, "add", ["cpu"], "compare")
    assert exc.value.code == "compare_needs_two_files"
    header = b"#!kernelcup mode compare\n" + FAST_PY
    with pytest.raises(InvalidSubmission, match="takes two files"):
        svc.submit(ANN, "a.py", header, "add", ["cpu"])


def test_the_header_names_leaderboard_and_device(svc: LeaderboardService) -> None:
    a = b"#!kernelcup leaderboard add\n#!kernelcup device H100\n" + FAST_PY
    receipt = svc.compare(ANN, "a.py", a, "b.py", SLOW_PY)
    assert receipt.leaderboard == "add" and [j.device for j in receipt.jobs] == ["H100"]
    with pytest.raises(InvalidSubmission, match="one device"):
        svc.compare(ANN, "a.py", b"#!kernelcup devices cpu H100\n" + FAST_PY, "b.py", SLOW_PY, "add")


def test_the_hourly_limit_counts_a_compare_as_two_runs_per_round(
    svc: LeaderboardService, settings: CoreSettings
) -> None:
    settings.rate_limit_per_hour = 10
    svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=4)  # 8 runs
    svc.submit(ANN, "c.py", FAST_PY, "add", ["cpu"], "test")  # 9
    with pytest.raises(RateLimited) as exc:
        svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=2)  # 4 more: 13 > 10
    message = exc.value.message
    assert "10 test, benchmark, profile or compare runs per hour" in message
    assert "a compare counts as 2 runs per round: this one 4, the last hour's 9" in message
    # Only the compare (the older one) leaving the window makes room: the retry time is its hour.
    with svc.db.transaction() as s:
        first = s.scalar(select(func.min(Job.created_at)))
    assert first is not None and exc.value.retry_at == first + timedelta(hours=1)
    svc.submit(ANN, "d.py", FAST_PY, "add", ["cpu"], "test")  # one plain run still fits: 10
    with pytest.raises(RateLimited, match="compare counts as 2 runs per round: the last hour's 10"):
        svc.submit(ANN, "e.py", FAST_PY, "add", ["cpu"], "test")
    # Ranked submissions have their own limit: a compare does not eat into it.
    svc.submit(ANN, "f.py", FAST_PY, "add", ["cpu"], "ranked")


def test_a_compare_bigger_than_the_limit_says_how_many_rounds_fit(
    svc: LeaderboardService, settings: CoreSettings
) -> None:
    settings.rate_limit_per_hour = 30
    with pytest.raises(InvalidSubmission) as exc:
        svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=20)
    assert exc.value.code == "too_many_rounds" and exc.value.field == "rounds"
    assert "makes 40 runs (2 per round), more than the 30" in exc.value.message
    assert "use at most 14 rounds (`rounds`; on the command line, --rounds 14)" in exc.value.message
    settings.rate_limit_per_hour = None
    settings.max_pending_jobs_per_user = 12
    with pytest.raises(InvalidSubmission, match="more than the 12 runs you may have waiting or running; use at most 6"):
        svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=8)


def test_the_pending_quota_counts_a_compare_as_its_runs(svc: LeaderboardService, settings: CoreSettings) -> None:
    settings.max_pending_jobs_per_user = 14
    svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=6)  # 12 runs pending
    svc.submit(ANN, "c.py", FAST_PY, "add", ["cpu"], "test")  # 13
    with pytest.raises(RateLimited, match=r"You have 13 runs waiting or running \(at most 14\) \(a compare counts"):
        svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=2)
    with pytest.raises(RateLimited, match="You have 13 runs waiting or running"):
        svc.submit(ANN, "c.py", FAST_PY, "add", ["cpu", "H100"], "test")  # 2 jobs: 15 > 14
    serve(svc, launcher())  # done: nothing pending any more
    svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=6)


def test_new_files_per_day_count_both_files_of_a_compare(svc: LeaderboardService, settings: CoreSettings) -> None:
    settings.max_new_files_per_day = 3
    svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=2)  # 2 new files
    svc.submit(ANN, "b.py", SLOW_PY, "add", ["cpu"], "test")  # a compare's second file is known: free
    with pytest.raises(RateLimited, match="You sent 2 different files in the last 24 hours"):
        svc.compare(ANN, "c.py", b"def custom_kernel(d):  # c\n    return d\n", "d.py",
                    b"def custom_kernel(d):  # d\n    return d\n", "add", "cpu", rounds=2)  # fmt: skip
    svc.submit(ANN, "c.py", b"def custom_kernel(d):  # c\n    return d\n", "add", ["cpu"], "test")  # the 3rd


def test_listing_a_users_submissions_shows_a_compare_as_one(svc: LeaderboardService) -> None:
    receipt = svc.compare(ANN, "a.py", FAST_PY, "b.py", SLOW_PY, "add", "cpu", rounds=2)
    (summary,) = svc.user_submissions(ANN)
    assert summary.submission_id == receipt.submission_id and summary.mode is SubmissionMode.COMPARE
    with svc.db.transaction() as s:
        (event,) = s.scalars(select(JobEvent).where(JobEvent.job_id == receipt.jobs[0].job_id)).all()
    assert (event.phase, event.detail) == ("queued", "compare: 2 rounds")


def test_a_compare_needs_only_the_workers_narrow_protocol(svc: LeaderboardService) -> None:
    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "cpu", rounds=2)
    w = Worker(OnlyWhatTheWorkerUses(svc), lambda _device: launcher(), FAST)  # type: ignore[arg-type]
    asyncio.run(asyncio.wait_for(w.run(once=True), 60))
    status = svc.submission_status(receipt.submission_id)
    assert status.accepted and status.comparison is not None and status.comparison.result is not None


def test_a_comparison_left_on_disk_by_a_killed_worker_is_stored_by_the_next_one(
    svc: LeaderboardService, tmp_path: Path
) -> None:
    from leaderboards.spool import ResultSpool

    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "cpu", rounds=2)
    claim = JobQueue(svc.db).claim("killed-worker", lease_s=5)
    assert claim is not None
    ResultSpool(tmp_path / "spool").put(claim, False, True, accepted_comparison())  # what it wrote before it died
    (pending,) = ResultSpool(tmp_path / "spool").pending()
    assert pending.final and pending.result == accepted_comparison()
    fake = launcher()
    w = Worker(svc, lambda _device: fake, FAST, spool=ResultSpool(tmp_path / "spool"))
    asyncio.run(asyncio.wait_for(w.run(once=True), 60))
    assert fake.requests == []  # stored, not run again
    status = svc.submission_status(receipt.submission_id)
    result = status.comparison.result if status.comparison else None
    assert status.done and result is not None and result.ratio == pytest.approx(0.9)
    assert not list((tmp_path / "spool").glob("*.json"))


def test_a_compare_spools_its_comparison_until_it_is_stored(svc: LeaderboardService, tmp_path: Path) -> None:
    from leaderboards.spool import ResultSpool

    svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "cpu", rounds=2)
    spool = ResultSpool(tmp_path / "spool")
    seen: list[list[str]] = []
    record = svc.record_comparison

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(sorted(p.name.split("-")[1] for p in (tmp_path / "spool").glob("*.json")))
        return record(*args, **kwargs)

    svc.record_comparison = watched  # type: ignore[method-assign]
    w = Worker(svc, lambda _device: launcher(), FAST, spool=spool)
    asyncio.run(asyncio.wait_for(w.run(once=True), 60))
    assert seen == [["compare"]]  # on disk while the database took it
    assert not list((tmp_path / "spool").glob("*.json"))  # and gone once it had it
