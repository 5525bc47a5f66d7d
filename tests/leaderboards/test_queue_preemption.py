"""Preemption (issue 33), on SQLite and PostgreSQL: when people's jobs wait on a device and no worker serving it is
idle, a worker running a program account's job gives it up for a person's. The program job's lease is revoked (every
later write of its old holder is refused), the job goes back to the queue without losing what it stored and without
counting the attempt, and the person's job starts in its place at once, under the preempting worker's new lease.
Never a person's job; a program job is preempted at most ``max_preemptions`` times, then runs to its end."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select

from leaderboards.errors import LeaseLost
from leaderboards.models import Job, JobEvent, JobStatus, Run
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
