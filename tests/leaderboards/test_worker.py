"""The worker loop on SQLite and PostgreSQL: results stored once, retries, timeouts, re-attach, cancel, lost leases."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import OnlyWhatTheWorkerUses, bind, future, make_problem, run_result
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from leaderboards import worker as worker_mod
from leaderboards.models import Job, JobEvent, JobStatus, Run
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, Phase, ProgressEvent, RunRequest, RunResult, Verdict
from runners.launchers.base import JobHandle, LauncherError
from runners.launchers.fake import FakeLauncher, Step

FAST = WorkerSettings(
    _env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.01, backoff_base_s=0, backoff_max_s=0, stop_grace_s=0.5
)


def scripted(*steps: Step, default: Callable[[RunRequest], RunResult] | None = None) -> FakeLauncher:
    """The shipped fake launcher answering its calls from a script (a RunResult, an exception, or a coroutine
    function), then with ``default``; it reports compiling and testing first, and stores no remote reference of its
    own."""
    return FakeLauncher(
        default or (lambda req: run_result(mode=req.mode)),
        name="scripted",
        steps=steps,
        progress=(ProgressEvent(phase=Phase.COMPILING), ProgressEvent(phase=Phase.TESTING, detail="test 1/1")),
        remote_refs=False,
    )


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu", "H100"])
    return service


def submit(
    svc: LeaderboardService, user: str = "ann", mode: str = "ranked", devices: tuple[str, ...] = ("cpu",)
) -> int:
    code = f"def custom_kernel(d):  # {user}\n    return d\n".encode()
    return svc.submit(UserRef(user), "s.py", code, "add", list(devices), mode).submission_id


def serve(svc: LeaderboardService, launcher: Any, settings: WorkerSettings = FAST, **kw: Any) -> Worker:
    w = Worker(svc, lambda device: launcher, settings, **kw)
    asyncio.run(asyncio.wait_for(w.run(once=True), 60))
    return w


def jobs_of(svc: LeaderboardService, submission_id: int) -> list[Job]:
    with svc.db.transaction() as s:
        jobs = s.scalars(select(Job).where(Job.submission_id == submission_id)).all()
        for j in jobs:
            s.expunge(j)
        return list(jobs)


def runs_of(svc: LeaderboardService, job_id: int) -> list[Run]:
    with svc.db.transaction() as s:
        runs = s.scalars(select(Run).where(Run.job_id == job_id).order_by(Run.id)).all()
        for r in runs:
            s.expunge(r)
        return list(runs)


def phases(svc: LeaderboardService, job_id: int) -> list[str]:
    with svc.db.transaction() as s:
        return list(s.scalars(select(JobEvent.phase).where(JobEvent.job_id == job_id).order_by(JobEvent.id)))


def test_ranked_job_stores_public_and_secret_runs_and_ranks(svc: LeaderboardService) -> None:
    sub = submit(svc)
    launcher = scripted()
    serve(svc, launcher)
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.SUCCEEDED and job.verdict == Verdict.ACCEPTED and job.attempts == 1
    runs = runs_of(svc, job.id)
    assert [r.secret for r in runs] == [False, True]
    assert [r.seed is not None for r in launcher.requests] == [False, True]
    assert all(r.device == "cpu" and r.device_name == "cpu" for r in launcher.requests)
    assert phases(svc, job.id) == ["queued", "started", "compiling", "testing", "compiling", "testing", "done"]
    ranking = svc.ranking("add", "cpu")
    assert [e.submission_id for e in ranking.entries] == [sub]


def test_the_done_event_reads_the_score_as_every_surface_prints_times(svc: LeaderboardService) -> None:
    """A newcomer's walk: live progress ended in "done: accepted, score 53944583 ns"."""
    sub = submit(svc, mode="benchmark")
    serve(svc, scripted(default=lambda req: run_result((53_944_583.0, 53_944_583.0), mode=req.mode)))
    [job] = jobs_of(svc, sub)
    with svc.db.transaction() as s:
        done = s.scalar(select(JobEvent.detail).where(JobEvent.job_id == job.id, JobEvent.phase == "done"))
    assert done == "accepted, score 53.9 ms"


def test_failed_public_run_is_stored_not_retried_and_skips_secret(svc: LeaderboardService) -> None:
    sub = submit(svc)
    launcher = scripted(run_result(verdict=Verdict.WRONG_ANSWER, message="mismatch at index 3"))
    serve(svc, launcher)
    [job] = jobs_of(svc, sub)
    assert len(launcher.requests) == 1
    assert job.status == JobStatus.SUCCEEDED and job.verdict == Verdict.WRONG_ANSWER and job.attempts == 1
    assert [r.passed for r in runs_of(svc, job.id)] == [False]
    assert svc.ranking("add", "cpu").entries == ()


@pytest.mark.parametrize("failure", ["raise", "verdict", "crash"])
def test_infrastructure_failures_retry_then_fail_as_not_your_fault(svc: LeaderboardService, failure: str) -> None:
    sub = submit(svc, mode="test")
    step = {
        "raise": LauncherError("modal outage"),
        "verdict": RunResult.infrastructure_error(Mode.TEST, "runner lost its GPU"),
        "crash": RuntimeError("bug in launcher"),
    }[failure]
    launcher = scripted(step, step, step, step)
    serve(svc, launcher)
    [job] = jobs_of(svc, sub)
    assert len(launcher.requests) == 3  # max_attempts, then it sticks
    assert job.status == JobStatus.FAILED and job.attempts == 3
    assert "not your fault" in (job.error or "")
    assert runs_of(svc, job.id) == []
    assert phases(svc, job.id).count("retrying") == 2 and phases(svc, job.id)[-1] == "failed"
    status = svc.submission_status(sub)
    assert "not your fault" in (status.jobs[0].error or "")


def _forged(kind: str) -> Callable[[RunRequest, JobHandle], Any]:
    """A launcher step answering with a result that must not be stored as this job's."""

    async def step(request: RunRequest, job: JobHandle) -> RunResult:
        honest = bind(run_result(mode=request.mode), request)
        if kind == "other request":  # e.g. a result replayed from another job or the public run
            return honest.model_copy(update={"request_sha256": "0" * 64})
        if kind == "other nonce":
            return honest.model_copy(update={"nonce": "f" * 32})
        if kind == "other mode":
            return honest.model_copy(update={"mode": Mode.TEST, "benchmarks": []})
        if kind == "benchmark missing":
            return honest.model_copy(update={"benchmarks": honest.benchmarks[:1]})
        raise AssertionError(kind)

    return step


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("other request", "does not answer this job's request"),
        ("other nonce", "does not answer this job's request"),
        ("other mode", "answered a test run for a ranked request"),
        ("benchmark missing", "accepted with tests or benchmarks missing"),
    ],
)
def test_a_result_that_does_not_answer_the_request_is_never_stored(
    svc: LeaderboardService, kind: str, reason: str
) -> None:
    """Issue 10: a runner's result is bound to its job (request hash, nonce, mode, case counts); anything else is an
    infrastructure failure, retried, and never ranked."""
    sub = submit(svc)
    launcher = scripted(*[_forged(kind)] * 3)
    serve(svc, launcher)
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.FAILED and job.attempts == 3
    assert reason in (job.error or "") and "not your fault" in (job.error or "")
    assert runs_of(svc, job.id) == [] and svc.ranking("add", "cpu").entries == ()


def test_an_unsandboxed_result_is_refused_unless_the_route_allows_it(svc: LeaderboardService) -> None:
    sub = submit(svc, mode="test")
    strict = scripted()
    strict.allows_unsandboxed = False  # a remote runner: its results must say they ran in the sandbox
    serve(svc, strict)
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.FAILED and "without its sandbox" in (job.error or "")
    assert runs_of(svc, job.id) == []

    sub = submit(svc, mode="test", user="bob")
    sandboxed = run_result(mode=Mode.TEST)
    sandboxed.system.sandboxed = True
    serve(svc, scripted(sandboxed, default=lambda req: sandboxed))
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.SUCCEEDED  # the same launcher's sandboxed result is stored
    # a file refused before anything ran is stored too: nothing ran, so nothing needed a sandbox
    sub = submit(svc, mode="test", user="carol")
    refused = RunResult(verdict=Verdict.COMPILE_ERROR, mode=Mode.TEST, message="refused")
    refused.system.ran = False
    strict = scripted(refused)
    strict.allows_unsandboxed = False
    serve(svc, strict)
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.SUCCEEDED and job.verdict == Verdict.COMPILE_ERROR


def test_infrastructure_failure_then_success_stores_once(svc: LeaderboardService) -> None:
    sub = submit(svc)
    launcher = scripted(LauncherError("runner vanished"))
    serve(svc, launcher)
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2
    assert [r.secret for r in runs_of(svc, job.id)] == [False, True]


def test_launcher_that_hangs_is_bounded_and_times_out(svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_mod, "launch_timeout_s", lambda request, margin, launcher=None: 0.2)
    sub = submit(svc, mode="test")

    async def hang(request: RunRequest, job: JobHandle) -> RunResult:
        await asyncio.sleep(3600)
        raise AssertionError

    launcher = scripted(hang, hang, hang)
    serve(svc, launcher)
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.TIMED_OUT and "not your fault" in (job.error or "")
    assert "within" in (job.error or "")


def test_reattach_hands_remote_ref_to_the_next_attempt(svc: LeaderboardService) -> None:
    sub = submit(svc, mode="test")
    queue = JobQueue(svc.db)
    claim = queue.claim("dead-worker", lease_s=0.01)  # a worker that started a remote run, then died
    assert claim is not None
    queue.set_remote_ref(claim, "call-42")
    launcher = scripted()
    import time

    time.sleep(0.05)
    serve(svc, launcher)
    assert launcher.refs_seen == ["call-42"]
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 2 and job.remote_ref is None


def test_remote_ref_is_stored_before_the_result(svc: LeaderboardService) -> None:
    sub = submit(svc, mode="test")
    seen: list[str | None] = []

    async def remote(request: RunRequest, job: JobHandle) -> RunResult:
        await job.set_remote_ref("gh-run-7")
        with svc.db.transaction() as s:
            seen.append(s.scalar(select(Job.remote_ref).where(Job.submission_id == sub)))
        return run_result(mode=request.mode)

    serve(svc, scripted(remote))
    assert seen == ["gh-run-7"]
    assert jobs_of(svc, sub)[0].remote_ref is None


def test_cancel_during_run_stores_nothing(svc: LeaderboardService) -> None:
    sub = submit(svc)

    async def slow(request: RunRequest, job: JobHandle) -> RunResult:
        await asyncio.to_thread(svc.cancel, sub, UserRef("ann"))
        await asyncio.sleep(5)  # the next heartbeat sees the lease gone and aborts us
        return run_result(mode=request.mode)

    w = serve(svc, scripted(slow))
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.CANCELLED
    assert runs_of(svc, job.id) == []
    assert w.reports[0].status == "abandoned"


def test_lease_lost_before_storing_stores_nothing(svc: LeaderboardService) -> None:
    sub = submit(svc, mode="test")

    async def overtaken(request: RunRequest, job: JobHandle) -> RunResult:
        with svc.db.transaction() as s:  # another worker took the job over meanwhile
            s.execute(Job.__table__.update().where(Job.submission_id == sub).values(lease_owner="someone-else"))
        return run_result(mode=request.mode)

    w = serve(svc, scripted(overtaken), WorkerSettings(_env_file=None, heartbeat_s=30, lease_s=120, poll_s=0.01))
    [job] = jobs_of(svc, sub)
    assert runs_of(svc, job.id) == []
    assert w.reports[0].status == "lease_lost"


def test_database_error_while_storing_is_retried(svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = submit(svc)
    real = svc.record_run
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("INSERT", {}, Exception("server closed the connection unexpectedly"))
        return real(*args, **kwargs)

    monkeypatch.setattr(svc, "record_run", flaky)
    serve(svc, scripted())
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.SUCCEEDED
    assert [r.secret for r in runs_of(svc, job.id)] == [False, True]


def test_crash_after_public_run_resumes_with_secret_only(svc: LeaderboardService) -> None:
    sub = submit(svc)
    queue = JobQueue(svc.db)
    claim = queue.claim("dead", lease_s=0.01)
    assert claim is not None
    svc.record_run(claim.job_id, run_result(), secret=False, owner=claim.owner)  # then the worker died
    import time

    time.sleep(0.05)
    launcher = scripted()
    serve(svc, launcher)
    assert [r.seed is not None for r in launcher.requests] == [True]
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.SUCCEEDED
    assert [r.secret for r in runs_of(svc, job.id)] == [False, True]


def test_unrouted_device_fails_with_the_routing_message(svc: LeaderboardService) -> None:
    sub = submit(svc, mode="test", devices=("H100",))

    def nowhere(device: str) -> Any:
        raise LauncherError(f"no launcher is routed for device {device!r}; add it to KERNELCUP_ROUTES")

    w = Worker(svc, nowhere, FAST)
    asyncio.run(asyncio.wait_for(w.run(once=True), 60))
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.FAILED and "KERNELCUP_ROUTES" in (job.error or "")


def test_concurrency_serves_jobs_in_parallel(svc: LeaderboardService) -> None:
    subs = [submit(svc, user=f"u{i}", mode="test") for i in range(4)]
    running = 0
    peak = 0

    async def slowish(request: RunRequest, job: JobHandle) -> RunResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.3)
        running -= 1
        return run_result(mode=request.mode)

    settings = FAST.model_copy(update={"concurrency": 4})
    serve(svc, scripted(slowish, slowish, slowish, slowish), settings)
    assert peak > 1
    for sub in subs:
        assert jobs_of(svc, sub)[0].status == JobStatus.SUCCEEDED


async def forever(request: RunRequest, job: JobHandle) -> RunResult:
    await asyncio.sleep(3600)
    raise AssertionError


def test_graceful_stop_requeues_running_job(svc: LeaderboardService) -> None:
    sub = submit(svc, mode="test")

    async def main() -> Worker:
        w = Worker(svc, lambda d: scripted(forever), FAST)
        stop = asyncio.Event()
        task = asyncio.create_task(w.run(stop))
        for _ in range(200):
            await asyncio.sleep(0.02)
            if w._held:
                break
        stop.set()
        await asyncio.wait_for(task, 10)
        return w

    w = asyncio.run(main())
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.QUEUED and job.attempts == 0 and job.lease_owner is None
    assert w.reports[0].status == "released"
    assert JobQueue(svc.db).alive_workers() == []  # it said goodbye


def test_a_second_cancel_while_a_killed_run_is_being_given_back_loses_neither_the_job_nor_its_report(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop path cancels a run, and while the run's cleanup gives the job back, something cancels it again (the
    lease heartbeat saw the job already released, or a second signal): the job is back in the queue and the
    worker's report of it still says so (found by a CI run where the heartbeat raced the release)."""
    sub = submit(svc, mode="test")

    async def main() -> Worker:
        w = Worker(svc, lambda d: scripted(forever), FAST)
        claim = w.queue.claim(w.worker_id, lease_s=60)
        assert claim is not None
        releasing, go_on = asyncio.Event(), asyncio.Event()
        release = w._release_quietly

        async def slow_release(c: Any, reason: str = "the worker stopped") -> bool:
            releasing.set()
            await go_on.wait()
            return await release(c, reason)

        monkeypatch.setattr(w, "_release_quietly", slow_release)
        task = asyncio.create_task(w.process(claim))
        await asyncio.sleep(0.3)  # the run is under way
        task.cancel()
        await asyncio.wait_for(releasing.wait(), 10)  # its cleanup is giving the job back ...
        task.cancel()  # ... when a second cancel comes
        go_on.set()
        await asyncio.gather(task, return_exceptions=True)
        return w

    w = asyncio.run(main())
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.QUEUED and job.attempts == 0 and job.lease_owner is None
    assert [r.status for r in w.reports] == ["released"]


def test_progress_events_are_capped(svc: LeaderboardService) -> None:
    sub = submit(svc, mode="test")

    async def chatty(request: RunRequest, job: JobHandle) -> RunResult:
        for i in range(worker_mod.MAX_EVENTS_PER_RUN + 50):
            await job.progress(ProgressEvent(phase=Phase.BENCHMARKING, detail=f"sample {i}"))
        return run_result(mode=request.mode)

    serve(svc, scripted(chatty))
    [job] = jobs_of(svc, sub)
    with svc.db.transaction() as s:
        n = s.scalar(select(func.count()).select_from(JobEvent).where(JobEvent.job_id == job.id))
    assert n is not None and n <= worker_mod.MAX_EVENTS_PER_RUN + 5


def test_settings_refuse_heartbeat_slower_than_lease() -> None:
    with pytest.raises(ValueError, match="HEARTBEAT_S"):
        WorkerSettings(_env_file=None, lease_s=10, heartbeat_s=6)


def test_the_worker_needs_only_its_narrow_protocol_of_the_service(svc: LeaderboardService) -> None:
    """Issue 12: the worker depends on ``WorkerService`` (run requests, record a run, whether the public run failed,
    the database for its queue and transaction), not on the whole service or a surface's status view."""
    passing, failing = submit(svc, "ann"), submit(svc, "bob")
    queue = JobQueue(svc.db)
    claim = queue.claim("dead", lease_s=0.01)  # ann's job: its public run failed, then the worker died
    assert claim is not None and claim.submission_id == passing
    svc.record_run(claim.job_id, run_result(verdict=Verdict.WRONG_ANSWER), secret=False, owner=claim.owner)
    import time

    time.sleep(0.05)
    launcher = scripted()
    w = Worker(OnlyWhatTheWorkerUses(svc), lambda device: launcher, FAST)
    asyncio.run(asyncio.wait_for(w.run(once=True), 60))
    assert [r.seed is None for r in launcher.requests] == [True, False], "bob's two runs; no secret run for ann"
    [ann] = jobs_of(svc, passing)
    assert ann.status == JobStatus.SUCCEEDED and [r.secret for r in runs_of(svc, ann.id)] == [False]
    [bob] = jobs_of(svc, failing)
    assert bob.status == JobStatus.SUCCEEDED and [r.secret for r in runs_of(svc, bob.id)] == [False, True]


def test_public_run_failed_says_so_only_for_a_stored_failing_public_run(svc: LeaderboardService) -> None:
    queue = JobQueue(svc.db)
    submit(svc, "ann")
    claim = queue.claim("w", lease_s=60)
    assert claim is not None
    assert svc.public_run_failed(claim.job_id) is None  # nothing stored yet
    svc.record_run(claim.job_id, run_result(verdict=Verdict.WRONG_ANSWER), secret=False, owner=claim.owner)
    assert svc.public_run_failed(claim.job_id) == Verdict.WRONG_ANSWER  # failed: the job's verdict says how
    submit(svc, "bob")
    other = queue.claim("w", lease_s=60)
    assert other is not None
    svc.record_run(other.job_id, run_result(), secret=False, owner=other.owner)
    assert svc.public_run_failed(other.job_id) is None  # passed


def test_a_runner_without_the_jobs_gpu_fails_it_at_once_without_retry_or_blame(svc: LeaderboardService) -> None:
    from runners.launchers.base import DeviceUnavailable

    sub = submit(svc, devices=("H100",))
    why = "this worker has no GPU; the job wants H100 (use -d cpu, or route H100 to a runner that has one)"
    launcher = scripted(DeviceUnavailable(why))
    w = serve(svc, launcher, settings=FAST.model_copy(update={"unhealthy_after": 1}))
    [job] = jobs_of(svc, sub)
    assert job.status == JobStatus.FAILED and job.attempts == 1 and job.error == why
    assert "not your fault" not in (job.error or "") and "retry" not in " ".join(phases(svc, job.id))
    assert len(launcher.requests) == 1 and w.healthy  # one try; the worker itself is fine


def test_runs_of_a_problem_changed_while_they_ran_are_kept_but_never_ranked(
    svc: LeaderboardService, tmp_path: Path
) -> None:
    """Red team, 2026-11-25: a ranked job's runs timed the old benchmarks, an admin forced a new problem meanwhile
    (the ranking started over), and both runs were stored under the new fingerprint: ranked first on old work."""
    from leaderboards.recording import SUPERSEDED

    sub = submit(svc)
    new_problem = make_problem(tmp_path / "v2", benchmarks=({"size": 10**7, "seed": 2}, {"size": 10**8, "seed": 3}))
    seen: list[list[int]] = []

    async def public_run(req: RunRequest, job: JobHandle) -> RunResult:
        seen.append([c["size"] for c in req.benchmarks])
        svc.update_leaderboard("add", problem=new_problem, force=True)  # while the run executes
        return run_result(medians_ns=(10.0, 20.0), mode=req.mode)

    def later(req: RunRequest) -> RunResult:
        seen.append([c["size"] for c in req.benchmarks])
        return run_result(medians_ns=(10.0, 20.0), mode=req.mode)

    serve(svc, scripted(public_run, default=later))
    [job] = jobs_of(svc, sub)
    runs = runs_of(svc, job.id)
    assert seen[0] == [100, 1000]  # the public run timed the old cases
    assert runs and runs[0].fingerprint == SUPERSEDED  # kept, under no leaderboard's fingerprint
    assert svc.ranking("add", "cpu").entries == ()  # and not ranked
    with svc.db.transaction() as s:
        details = list(s.scalars(select(JobEvent.detail).where(JobEvent.job_id == job.id)))
    assert any("not ranked: the problem changed while it ran" in d for d in details), details
    # A run of the new problem from the start is ranked as before.
    fresh = submit(svc, user="bob")
    serve(svc, scripted(default=later))
    assert [e.submission_id for e in svc.ranking("add", "cpu").entries] == [fresh]


def test_an_accepted_result_that_says_nothing_ran_is_not_excused_from_the_sandbox(svc: LeaderboardService) -> None:
    """Red team, 2026-11-25: a result with `ran=False` skipped the sandbox rule even when accepted with timed
    benchmarks, and was ranked on a route that must sandbox."""
    sub = submit(svc)

    def unsandboxed(req: RunRequest) -> RunResult:
        result = run_result(mode=req.mode)
        result.system.sandboxed, result.system.ran = False, False
        return result

    strict = scripted(default=unsandboxed)
    strict.allows_unsandboxed = False  # type: ignore[attr-defined]
    serve(svc, strict)
    [job] = jobs_of(svc, sub)
    assert job.status != JobStatus.SUCCEEDED and "without its sandbox" in (job.error or ""), job.error
    assert svc.ranking("add", "cpu").entries == ()


def test_a_once_worker_runs_its_housekeeping_again_at_the_end_and_serves_what_it_queued(
    svc: LeaderboardService, caplog: pytest.LogCaptureFixture
) -> None:
    """An organizer's walk: `kernelcup worker --once` after a deadline ran the system tests, but the freeze needed a
    second call, and the log said nothing of either. A once worker now runs its housekeeping before and after its
    slots, serving what a pass queued, until a pass does nothing; each line a pass returns is logged."""
    passes: list[int] = []

    def housekeeping() -> list[str]:
        passes.append(len(passes))
        if len(passes) == 2:  # the pass after the first slots: queue something, as a deadline queues system tests
            submit(svc, user="late", mode="test")
            return ["add: queued 1 job"]
        return []

    caplog.set_level("INFO", logger="leaderboards.worker")
    w = Worker(svc, lambda d: scripted(), FAST, housekeeping=housekeeping)
    asyncio.run(asyncio.wait_for(w.run(once=True), 60))
    assert passes == [0, 1, 2]  # before, after (queued), after again (nothing: done)
    assert [r.status for r in w.reports] == ["succeeded"]  # served in the same call
    assert "add: queued 1 job" in caplog.text


def test_a_once_worker_asked_to_stop_runs_no_more_housekeeping_passes(svc: LeaderboardService) -> None:
    """A review: after a graceful stop a once worker still ran its end-of-run passes (each may queue system tests or
    freeze final standings after the operator asked it to stop)."""
    passes: list[int] = []

    def housekeeping() -> list[str]:
        passes.append(len(passes))
        return [f"pass {len(passes)}: queued something"]

    async def main() -> None:
        stop = asyncio.Event()
        w = Worker(svc, lambda d: scripted(), FAST, housekeeping=housekeeping)
        task = asyncio.create_task(w.run(stop, once=True))
        await asyncio.sleep(0)
        stop.set()
        await asyncio.wait_for(task, 60)

    asyncio.run(main())
    assert len(passes) <= 1, passes
