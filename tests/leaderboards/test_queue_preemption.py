"""Preemption (issue 33), on SQLite and PostgreSQL: when people's jobs wait on a device and no worker serving it is
idle, a worker running a program account's job gives it up for a person's. The program job's lease is revoked (every
later write of its old holder is refused), the job goes back to the queue without losing what it stored and without
counting the attempt, and the person's job starts in its place at once, under the preempting worker's new lease.
Never a person's job; a program job is preempted at most ``max_preemptions`` times, then runs to its end."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select

from leaderboards.errors import LeaseLost
from leaderboards.models import Job, JobEvent, JobStatus, Run
from leaderboards.models import Worker as WorkerRow
from leaderboards.queue import PREEMPTED, Claim, JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult
from runners.launchers.base import JobHandle
from runners.launchers.fake import FakeLauncher, accepted_result

BOT = UserRef("generator")
DEVICE = "H100"


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu", DEVICE])
    service.create_token(BOT, program=True)
    return service


def send(svc: LeaderboardService, user: UserRef, n: int, mode: str = "test", device: str = DEVICE) -> int:
    code = f"def custom_kernel(d):  # {user.identity} {n}\n    return d\n".encode()
    return svc.submit(user, "k.py", code, "add", [device], mode).jobs[0].job_id


def pool(svc: LeaderboardService, workers: int, **kw: float) -> JobQueue:
    """A queue with ``workers`` live workers on the device and no program lane (programs may fill every worker)."""
    queue = JobQueue(svc.db, clock=svc.clock, program_reserve_share=0.0, **kw)  # type: ignore[arg-type]
    for i in range(workers):
        queue.register_worker(f"w{i}", [DEVICE])
    return queue


def take(queue: JobQueue, worker: str, device: str = DEVICE) -> Claim:
    claim = queue.claim(worker, lease_s=60, devices=[device])
    assert claim is not None
    return claim


def row(svc: LeaderboardService, job_id: int) -> Job:
    with svc.db.transaction() as s:
        job = s.get(Job, job_id)
        assert job is not None
        s.expunge(job)
        return job


def events(svc: LeaderboardService, job_id: int) -> list[tuple[str, str]]:
    with svc.db.transaction() as s:
        rows = s.execute(
            select(JobEvent.phase, JobEvent.detail).where(JobEvent.job_id == job_id).order_by(JobEvent.id)
        ).all()
        return [(str(p), str(d)) for p, d in rows]


def complete(svc: LeaderboardService, queue: JobQueue, claim: Claim) -> None:
    with svc.db.transaction() as s:
        queue.complete(s, claim)


def test_a_person_waiting_behind_busy_program_jobs_takes_one_of_their_places(svc: LeaderboardService) -> None:
    queue = pool(svc, 2)
    programs = [send(svc, BOT, i) for i in range(3)]
    first, second = take(queue, "w0"), take(queue, "w1")
    assert first.program and second.program and {first.job_id, second.job_id} == set(programs[:2])
    assert queue.preempt_for_person("w0", [first], lease_s=60) is None  # nobody waits: nothing to do
    ann = send(svc, UserRef("ann"), 0)

    preemption = queue.preempt_for_person("w0", [first], lease_s=60)

    assert preemption is not None and preemption.preempted == first and preemption.count == 1
    assert preemption.claim.job_id == ann and not preemption.claim.program and preemption.claim.attempt == 1
    person = row(svc, ann)
    assert person.status == JobStatus.RUNNING and person.lease_owner == preemption.claim.owner
    given_up = row(svc, first.job_id)
    assert given_up.status == JobStatus.QUEUED and given_up.lease_owner is None and given_up.attempts == 0
    assert given_up.started_at is None and given_up.remote_ref is None  # the killed run's time is not charged
    phase, detail = events(svc, first.job_id)[-1]
    assert phase == PREEMPTED and "1/3" in detail and "not counted as an attempt" in detail
    # The lease is revoked: nothing the old holder still does lands.
    assert not queue.heartbeat(first, lease_s=60)
    assert not queue.add_event(first, "testing", "late progress")
    with pytest.raises(LeaseLost):
        queue.set_remote_ref(first, "late-ref")
    with pytest.raises(LeaseLost):
        svc.record_run(first.job_id, run_result(mode=Mode.TEST), owner=first.owner)
    with svc.db.transaction() as s:
        assert s.scalars(select(Run).where(Run.job_id == first.job_id)).all() == []
    # The other program job was not touched: one person, one preemption.
    assert queue.preempt_for_person("w1", [second], lease_s=60) is None
    assert row(svc, second.job_id).lease_owner == second.owner
    # The preempted job is the program's next: it runs again, as attempt 1, and finishes.
    complete(svc, queue, preemption.claim)
    again = take(queue, "w0")
    assert again.job_id == first.job_id and again.attempt == 1
    svc.record_run(again.job_id, run_result(mode=Mode.TEST), owner=again.owner)
    complete(svc, queue, again)
    assert row(svc, first.job_id).status == JobStatus.SUCCEEDED


def test_no_preemption_while_a_worker_is_idle_and_never_of_a_persons_job(svc: LeaderboardService) -> None:
    queue = pool(svc, 3)
    for i in range(4):
        send(svc, BOT, i)
    program_claims = [take(queue, "w0"), take(queue, "w1")]
    send(svc, UserRef("ann"), 0)
    # A third worker is idle: it takes ann's job at its next poll, no program run is killed for it.
    assert queue.preempt_for_person("w0", program_claims[:1], lease_s=60) is None
    anns = take(queue, "w2")
    assert not anns.program
    bob = send(svc, UserRef("bob"), 0)
    # Every worker is busy now, bob waits: ann's running job is never given up for him ...
    assert queue.preempt_for_person("w2", [anns], lease_s=60) is None
    assert row(svc, anns.job_id).lease_owner == anns.owner
    # ... a program's is (the one claimed last: the least work lost).
    preemption = queue.preempt_for_person("w0", program_claims, lease_s=60)
    assert preemption is not None and preemption.preempted == program_claims[1] and preemption.claim.job_id == bob
    # A program job waiting is no reason to preempt another program job.
    assert queue.preempt_for_person("w0", program_claims[:1], lease_s=60) is None


def test_two_workers_looking_at_once_preempt_one_program_job_for_one_person(svc: LeaderboardService) -> None:
    queue = pool(svc, 2)
    for i in range(3):
        send(svc, BOT, i)
    first, second = take(queue, "w0"), take(queue, "w1")
    ann = send(svc, UserRef("ann"), 0)
    results: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def look(worker: str, claim: Claim) -> None:
        barrier.wait()
        results[worker] = queue.preempt_for_person(worker, [claim], lease_s=60)

    threads = [threading.Thread(target=look, args=a) for a in (("w0", first), ("w1", second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    done = [p for p in results.values() if p is not None]
    assert len(results) == 2 and len(done) == 1
    with svc.db.transaction() as s:
        queued = s.scalars(select(Job.id).where(Job.status == JobStatus.QUEUED.value).order_by(Job.id)).all()
        running = s.scalars(select(Job.id).where(Job.status == JobStatus.RUNNING.value)).all()
    assert len(queued) == 2 and ann in running and len(running) == 2


def test_a_program_job_is_preempted_at_most_k_times_then_runs_to_its_end(svc: LeaderboardService) -> None:
    queue = pool(svc, 1, max_preemptions=2)
    job = send(svc, BOT, 0)
    for n in range(1, 3):
        claim = take(queue, "w0")
        assert claim.job_id == job and claim.attempt == 1
        person = send(svc, UserRef(f"person{n}"), n)
        preemption = queue.preempt_for_person("w0", [claim], lease_s=60)
        assert preemption is not None and preemption.count == n and preemption.claim.job_id == person
        complete(svc, queue, preemption.claim)
    assert "the last time" in events(svc, job)[-1][1]
    claim = take(queue, "w0")
    assert claim.job_id == job
    send(svc, UserRef("person3"), 3)
    assert queue.preempt_for_person("w0", [claim], lease_s=60) is None  # preempted twice: it runs to its end now
    svc.record_run(job, run_result(mode=Mode.TEST), owner=claim.owner)
    complete(svc, queue, claim)
    finished = row(svc, job)
    assert finished.status == JobStatus.SUCCEEDED and finished.attempts == 1
    assert [p for p, _ in events(svc, job)].count(PREEMPTED) == 2
    assert JobQueue(svc.db, max_preemptions=0).preempt_for_person("w0", [claim], lease_s=60) is None  # off


def test_a_ranked_program_job_keeps_its_stored_public_run_when_preempted(svc: LeaderboardService) -> None:
    queue = pool(svc, 1)
    job = send(svc, BOT, 0, mode="ranked")
    claim = take(queue, "w0")
    svc.record_run(job, run_result(), owner=claim.owner)  # the public run is stored; the secret one is running
    send(svc, UserRef("ann"), 0)
    preemption = queue.preempt_for_person("w0", [claim], lease_s=60)
    assert preemption is not None
    complete(svc, queue, preemption.claim)
    again = take(queue, "w0")
    assert again.job_id == job
    planned = svc.run_requests(job)
    assert [(p.secret, p.recorded) for p in planned] == [(False, True), (True, False)]  # only the secret run is left
    svc.record_run(job, run_result(), secret=True, owner=again.owner)
    complete(svc, queue, again)
    with svc.db.transaction() as s:
        assert sorted(s.scalars(select(Run.secret).where(Run.job_id == job))) == [False, True]


def test_the_worker_kills_a_program_run_for_a_person_and_runs_the_program_job_again(svc: LeaderboardService) -> None:
    """The worker loop end to end with the fake launcher: one worker serves the device; the program's run holds it
    until cancelled; a person's job submitted meanwhile starts within a bound, the program's run is killed through
    the launcher's cancel path, and the program job runs again later and stores exactly one result."""
    started = threading.Event()
    cancelled: list[RunRequest] = []

    async def held(request: RunRequest, job: JobHandle) -> RunResult:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(request)
            raise
        return accepted_result(request)

    launcher = FakeLauncher(accepted_result, name="fake", steps=(held,), remote_refs=False)
    settings = WorkerSettings(_env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.02, stop_grace_s=0.5)
    program = send(svc, BOT, 0, device="cpu")
    submitted: dict[str, float] = {}

    async def main() -> Worker:
        worker = Worker(svc, lambda device: launcher, settings, devices=["cpu"])
        stop = asyncio.Event()
        serving = asyncio.create_task(worker.run(stop))
        await asyncio.to_thread(started.wait, 30)
        submitted["at"] = time.monotonic()
        person = await asyncio.to_thread(send, svc, UserRef("ann"), 0, "test", "cpu")
        submitted["person"] = person
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = {j: row(svc, j).status for j in (program, person)}
            if row(svc, person).started_at is not None and "person_started" not in submitted:
                submitted["person_started"] = time.monotonic()
            if all(s == JobStatus.SUCCEEDED for s in states.values()):
                break
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(serving, 30)
        return worker

    worker = asyncio.run(main())
    person = int(submitted["person"])
    assert submitted["person_started"] - submitted["at"] < 2.0  # polls of 0.02 s: well within
    assert row(svc, person).status == JobStatus.SUCCEEDED and row(svc, program).status == JobStatus.SUCCEEDED
    assert len(cancelled) == 1 and len(launcher.requests) == 3  # the killed run, the person's, the program's again
    phases = [p for p, _ in events(svc, program)]
    assert phases.count(PREEMPTED) == 1 and "killed" in phases and phases[-1] == "done"
    assert row(svc, program).attempts == 1
    with svc.db.transaction() as s:
        assert len(s.scalars(select(Run).where(Run.job_id == program)).all()) == 1
    assert [r.status for r in worker.reports if r.job_id == program] == ["preempted", JobStatus.SUCCEEDED.value]


def test_a_worker_busy_with_work_besides_jobs_is_no_idle_place(svc: LeaderboardService) -> None:
    """M4 (red team): a worker running an input hack, a system test, a re-timing round or a rejudge holds no job row,
    yet it is no idle place. With one worker on a program job, the other busy with a hack and a person waiting, the
    program job is preempted; once the hack is over (an idle place again) nothing is preempted."""
    queue = pool(svc, 2)
    send(svc, BOT, 0)
    program = take(queue, "w0")
    ann = send(svc, UserRef("ann"), 0)
    assert queue.preempt_for_person("w0", [program], lease_s=60) is None  # w1 is idle: it takes ann's job itself

    queue.set_worker_busy("w1", ["input hack"])
    preemption = queue.preempt_for_person("w0", [program], lease_s=60)

    assert preemption is not None and preemption.preempted == program and preemption.claim.job_id == ann
    complete(svc, queue, preemption.claim)
    again = take(queue, "w0")
    assert again.job_id == program.job_id
    send(svc, UserRef("bob"), 0)
    queue.set_worker_busy("w1", [])  # the hack is over
    assert queue.preempt_for_person("w0", [again], lease_s=60) is None
    # Each item counts: w1 running a system test and a rejudge (two slots) with a third worker idle is two places.
    queue.register_worker("w2", [DEVICE])
    queue.set_worker_busy("w1", ["system test", "rejudge"])
    assert queue.preempt_for_person("w0", [again], lease_s=60) is not None


def test_busy_with_is_cleared_by_a_restart_and_a_stop_and_not_counted_for_a_dead_worker(
    svc: LeaderboardService,
) -> None:
    queue = pool(svc, 2)
    queue.set_worker_busy("w1", ["re-timing round"])
    queue.worker_heartbeat("w0", busy=[])
    with svc.db.transaction() as s:
        assert queue._busy_elsewhere(s, DEVICE, svc.clock()) == 1
        assert queue._busy_elsewhere(s, "cpu", svc.clock()) == 0  # w1 serves H100 only
    queue.register_worker("w1", [DEVICE])  # started again under its id: it runs nothing yet
    with svc.db.transaction() as s:
        assert queue._busy_elsewhere(s, DEVICE, svc.clock()) == 0
    queue.set_worker_busy("w1", ["rejudge"])
    queue.stop_worker("w1")
    later = JobQueue(svc.db, clock=lambda: svc.clock() + timedelta(seconds=120))
    with svc.db.transaction() as s:
        assert queue._busy_elsewhere(s, DEVICE, svc.clock()) == 0
        assert later._busy_elsewhere(s, DEVICE, later.clock()) == 0
        assert s.scalar(select(WorkerRow.busy_with).where(WorkerRow.id == "w1")) is None


class _HeldRunner:
    """Stands in for an input-hack runner: its first database call is its claim (as the real runners'), then it holds
    the worker until ``release`` is set."""

    def __init__(self, svc: LeaderboardService) -> None:
        self.svc = svc
        self.running = threading.Event()
        self.release = threading.Event()
        self.runs = 0

    def claim(self, worker_id: str, devices: object) -> str | None:
        return None if self.runs else "hack 1"

    async def run_one(self, worker_id: str, devices: object, db: Any) -> bool:
        claim = await db(self.claim, worker_id, devices)
        if claim is None:
            return False
        self.runs += 1
        self.running.set()
        await asyncio.to_thread(self.release.wait, 30)
        return True


def busy_with(svc: LeaderboardService, worker_id: str) -> str | None:
    with svc.db.transaction() as s:
        return s.scalar(select(WorkerRow.busy_with).where(WorkerRow.id == worker_id))


def test_the_worker_records_an_input_hack_on_its_row_and_a_program_job_elsewhere_yields(
    svc: LeaderboardService,
) -> None:
    """The worker loop: while its idle-time runner (an input hack) runs, the worker's row says so, and another worker's
    program job is preempted for a person's; when the hack ends the row is cleared."""
    runner = _HeldRunner(svc)
    settings = WorkerSettings(_env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.02, stop_grace_s=0.5)
    launcher = FakeLauncher(accepted_result, name="fake", remote_refs=False)
    queue = pool(svc, 0)
    queue.register_worker("w0", [DEVICE])

    async def main() -> tuple[str | None, object, str | None]:
        hacks: Any = runner  # duck-typed: a runner's run_one is all the worker calls
        worker = Worker(svc, lambda device: launcher, settings, devices=[DEVICE], worker_id="hacker", hacks=hacks)
        stop = asyncio.Event()
        serving = asyncio.create_task(worker.run(stop))
        assert await asyncio.to_thread(runner.running.wait, 30)
        await asyncio.sleep(0.3)  # a few heartbeats: they keep the label
        during = busy_with(svc, "hacker")
        await asyncio.to_thread(send, svc, BOT, 0)
        program = await asyncio.to_thread(take, queue, "w0")
        await asyncio.to_thread(send, svc, UserRef("ann"), 0)
        preemption = await asyncio.to_thread(queue.preempt_for_person, "w0", [program], lease_s=60)
        runner.release.set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if busy_with(svc, "hacker") is None:
                break
            await asyncio.sleep(0.02)
        after = busy_with(svc, "hacker")
        stop.set()
        await asyncio.wait_for(serving, 30)
        return during, preemption, after

    during, preemption, after = asyncio.run(main())
    assert during == "input hack"
    assert preemption is not None  # the hacking worker was no idle place
    assert after is None


def test_the_persons_run_starts_after_the_preempted_run_was_killed(svc: LeaderboardService) -> None:
    """L3: after a preemption the slot waits for the killed program run's cancel to complete (here it takes 0.4 s,
    like a remote cancel) before it launches the person's run, so the two never hold the device together."""
    marks: dict[str, float] = {}

    async def held(request: RunRequest, job: JobHandle) -> RunResult:
        marks["program_started"] = time.monotonic()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(0.4)  # the launcher's cancel path: the run is being torn down
            marks["program_killed"] = time.monotonic()
            raise
        return accepted_result(request)

    async def persons(request: RunRequest, job: JobHandle) -> RunResult:
        assert b"ann" in request.submission.content
        marks["person_launched"] = time.monotonic()
        return accepted_result(request)

    launcher = FakeLauncher(accepted_result, name="fake", steps=(held, persons), remote_refs=False)
    settings = WorkerSettings(_env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.02, stop_grace_s=0.5)
    program = send(svc, BOT, 0, device="cpu")

    async def main() -> None:
        worker = Worker(svc, lambda device: launcher, settings, devices=["cpu"])
        stop = asyncio.Event()
        serving = asyncio.create_task(worker.run(stop))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "program_started" in marks:
                break
            await asyncio.sleep(0.01)
        person = await asyncio.to_thread(send, svc, UserRef("ann"), 0, "test", "cpu")
        while time.monotonic() < deadline:
            if {row(svc, person).status, row(svc, program).status} == {JobStatus.SUCCEEDED}:
                break  # the person's job, then the program's again
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(serving, 30)

    asyncio.run(main())
    assert row(svc, program).status == JobStatus.SUCCEEDED
    assert marks["program_killed"] <= marks["person_launched"]


def test_a_kill_that_hangs_delays_the_persons_run_by_the_bound_only(svc: LeaderboardService) -> None:
    """L3, the bound: a cancel that never completes in time delays the person's run by ``preempt_kill_wait_s``."""
    marks: dict[str, float] = {}
    unstuck = asyncio.Event()

    async def held(request: RunRequest, job: JobHandle) -> RunResult:
        marks["program_started"] = time.monotonic()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            marks["cancel_asked"] = time.monotonic()
            await unstuck.wait()  # a cancel that hangs (until the person's run is launched)
            raise
        return accepted_result(request)

    async def persons(request: RunRequest, job: JobHandle) -> RunResult:
        assert b"ann" in request.submission.content
        marks["person_launched"] = time.monotonic()
        unstuck.set()
        return accepted_result(request)

    launcher = FakeLauncher(accepted_result, name="fake", steps=(held, persons), remote_refs=False)
    settings = WorkerSettings(_env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.02, stop_grace_s=0.5)
    send(svc, BOT, 0, device="cpu")

    async def main() -> None:
        worker = Worker(svc, lambda device: launcher, settings, devices=["cpu"])
        worker.preempt_kill_wait_s = 0.5
        stop = asyncio.Event()
        serving = asyncio.create_task(worker.run(stop))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "program_started" in marks:
                break
            await asyncio.sleep(0.01)
        await asyncio.to_thread(send, svc, UserRef("ann"), 0, "test", "cpu")
        while time.monotonic() < deadline:
            if "person_launched" in marks:
                break
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(serving, 30)

    asyncio.run(main())
    waited = marks["person_launched"] - marks["cancel_asked"]
    assert 0.45 <= waited < 3.0
