"""Programs and people sharing a device (issue 33): does a program that keeps its lane saturated slow people down?

A discrete-event simulation of workers serving one device, on the real queue (``JobQueue.claim`` and its fair order
and program lane, ``LeaderboardService.submit``, a SQLite database) with a simulated clock and a simulated launcher:
a job "runs" for a drawn duration and is then marked done. People submit at random (Poisson arrivals, exponential
durations) so that they alone keep ``--people-load`` of the workers busy; an idle worker notices a new job after up to
``--poll-s`` (the worker's poll interval). The program keeps ``--backlog`` jobs queued at all times (a batch refilled
as its jobs finish): its lane is always full. The people's sequence of arrivals and durations is the same in every
scenario (its own random stream), so the scenarios differ only in the program.

Preemption (the worker's default, ``JobQueue.preempt_for_person``): a worker running a program's job looks every
``--poll-s`` whether people's jobs wait with no worker idle; when the queue says so, it takes the person's job at once
(the same transaction revokes the program job's lease and puts it back in the queue) and the program's run is killed
in the background. The person's run then waits ``--kill-s`` for the killed run to let go of the GPU (the local
launcher's GPU pool), counted in its run, not in its queue wait; the killed run's time is wasted.

Scenarios: people alone; people and the program with the lane (``--reserve-share`` of the workers kept idle, the
worker's default) and preemption (``--max-preemptions``, the default); the same without preemption (the lane alone);
people and the program with neither. Reports each one's people's queue wait (claim time minus submit time: p50, p95,
p99, mean), the program's throughput, its preempted runs and the device time they wasted, and the growth of the
people's p95 over people alone.

    .venv/bin/python benchmarks/program_fairness.py                 # 8 workers, 2 simulated hours, seed 1
    .venv/bin/python benchmarks/program_fairness.py --workers 4 --people-load 0.25 --hours 4 --json
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import update

from leaderboards.db import Database, make_engine
from leaderboards.models import Base, Job, JobStatus
from leaderboards.problems import load_problem
from leaderboards.queue import PREEMPT_MAX, PROGRAM_RESERVE_SHARE, Claim, JobQueue
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings

REPO = Path(__file__).resolve().parents[1]
DEVICE = "H100"
START = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
HEARTBEAT_S = 30.0


@dataclass
class Outcome:
    name: str
    people_waits: list[float] = field(default_factory=list)
    program_jobs: int = 0
    people_jobs: int = 0
    busy_s: float = 0.0
    preempted: int = 0
    wasted_s: float = 0.0

    def summary(self, hours: float, workers: int) -> dict[str, float | int | str]:
        waits = sorted(self.people_waits)

        def pct(p: float) -> float:
            return waits[min(len(waits) - 1, int(p * len(waits)))] if waits else 0.0

        return {
            "scenario": self.name,
            "people_jobs": self.people_jobs,
            "people_wait_p50_s": round(pct(0.50), 3),
            "people_wait_p95_s": round(pct(0.95), 3),
            "people_wait_p99_s": round(pct(0.99), 3),
            "people_wait_mean_s": round(statistics.fmean(waits), 3) if waits else 0.0,
            "program_jobs": self.program_jobs,
            "program_jobs_per_hour": round(self.program_jobs / hours, 1),
            "preempted_runs": self.preempted,
            "wasted_device_share": round(self.wasted_s / (hours * 3600 * workers), 4),
            "utilisation": round(self.busy_s / (hours * 3600 * workers), 3),
        }


def simulate(args: argparse.Namespace, name: str, program: bool, reserve: float, preempt: int) -> Outcome:
    """One scenario on a fresh database."""
    now = [START]
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/fairness.sqlite3")
        Base.metadata.create_all(engine)  # the models' tables (the migrations are tested elsewhere)
        db = Database(engine)
        settings = CoreSettings(
            _env_file=None, database_url=None, data_dir=Path(tmp) / "data", rate_limit_per_hour=None,
            ranked_rate_limit_per_hour=None, program_rate_limit_per_hour=None, max_new_files_per_day=None,
            duplicate_window_s=0, max_pending_jobs_per_user=10**6, program_max_pending_jobs=10**6,
        )  # fmt: skip
        service = LeaderboardService(db, settings, clock=lambda: now[0])
        service.create_leaderboard(
            load_problem(REPO / "problems" / "vectoradd"), name="fair", deadline=START + timedelta(days=365),
            devices=[DEVICE],
        )  # fmt: skip
        queue = JobQueue(db, clock=lambda: now[0], program_reserve_share=reserve, max_preemptions=preempt)
        workers = [f"worker-{i}" for i in range(args.workers)]
        for w in workers:
            queue.register_worker(w, [DEVICE])
        bot = UserRef("generator")
        service.create_token(bot, program=True)
        people_rng, program_rng, poll_rng = (random.Random(args.seed * 1000 + k) for k in range(3))
        rate = args.people_load * args.workers / args.person_job_s
        outcome = Outcome(name)
        created: dict[int, tuple[datetime, bool]] = {}
        serial = [0]

        def send(user: UserRef) -> int:
            serial[0] += 1
            code = f"def custom_kernel(data):  # {serial[0]}\n    return data\n".encode()
            receipt = service.submit(user, "k.py", code, "fair", [DEVICE], "test")
            job_id = receipt.jobs[0].job_id
            created[job_id] = (now[0], user is bot)
            return job_id

        events: list[tuple[float, int, str, str]] = []
        order = [0]
        running: dict[str, tuple[Claim, float]] = {}  # worker -> the claim it runs, and when it started
        waiting: set[int] = set()  # people's jobs submitted and not yet claimed

        def at(t: float, kind: str, who: str = "") -> None:
            order[0] += 1
            heapq.heappush(events, (t, order[0], kind, who))

        end = args.hours * 3600.0
        idle: set[str] = set()  # each worker starts with a poll of its own (below)
        at(people_rng.expovariate(rate), "arrival")
        at(HEARTBEAT_S, "heartbeat")
        if program:
            for _ in range(args.backlog):
                send(bot)
        for w in workers:
            at(poll_rng.uniform(0, args.poll_s), "free", w)
        durations: dict[int, float] = {}
        planned: dict[str, float] = {}  # a claim's run length

        def start(worker: str, claim: Claim, t: float, delay_s: float) -> None:
            submitted, is_program = created[claim.job_id]
            if is_program:
                duration = program_rng.expovariate(1 / args.program_job_s)
                outcome.program_jobs += 1
            else:
                waiting.discard(claim.job_id)
                outcome.people_waits.append((now[0] - submitted).total_seconds())
                outcome.people_jobs += 1
                duration = durations[claim.job_id] + delay_s  # after a preemption: the killed run lets go first
            outcome.busy_s += duration
            running[worker] = (claim, t)
            planned[claim.owner] = duration
            at(t + duration, f"done:{claim.job_id}:{claim.owner}", worker)

        while events:
            t, _, kind, who = heapq.heappop(events)
            if t > end:
                break
            now[0] = START + timedelta(seconds=t)
            if kind == "heartbeat":
                for w in workers:
                    queue.worker_heartbeat(w)
                at(t + HEARTBEAT_S, "heartbeat")
            elif kind == "arrival":
                job_id = send(UserRef(f"person-{people_rng.randrange(args.people)}"))
                durations[job_id] = people_rng.expovariate(1 / args.person_job_s)  # drawn here: the same in every run
                waiting.add(job_id)
                at(t + people_rng.expovariate(rate), "arrival")
                if idle:  # an idle worker notices the job at its next poll
                    w = sorted(idle)[0]
                    idle.discard(w)
                    at(t + poll_rng.uniform(0, args.poll_s), "free", w)
                elif preempt:  # each worker running a program's job looks at its next poll
                    for w, (held, _) in sorted(running.items()):
                        if held.program:
                            at(t + poll_rng.uniform(0, args.poll_s), f"look:{held.owner}", w)
            elif kind == "free":
                claim = queue.claim(who, lease_s=3600.0, devices=[DEVICE])
                if claim is None:
                    idle.add(who)
                    continue
                start(who, claim, t, 0.0)
            elif kind.startswith("look:"):
                entry = running.get(who)
                if entry is None or entry[0].owner != kind.split(":", 1)[1] or not waiting:
                    continue  # it ended meanwhile, or nobody waits any more
                held, since = entry
                preemption = queue.preempt_for_person(who, [held], lease_s=3600.0)
                if preemption is None:
                    at(t + args.poll_s, kind, who)  # it looks again at every poll while people wait
                    continue
                outcome.preempted += 1
                outcome.wasted_s += t - since
                outcome.busy_s -= since + planned[held.owner] - t  # the rest of the killed run never happens
                start(who, preemption.claim, t, args.kill_s)
            elif kind.startswith("done:"):
                ended, owner = kind.split(":", 2)[1:]
                if who not in running or running[who][0].owner != owner:
                    continue  # a preempted run: killed before it ended
                del running[who]
                job_id = int(ended)
                with db.transaction() as s:
                    s.execute(
                        update(Job)
                        .where(Job.id == job_id)
                        .values(status=JobStatus.SUCCEEDED.value, finished_at=now[0], lease_owner=None)
                    )
                if created[job_id][1]:
                    send(bot)  # the program keeps its backlog
                    for w in sorted(idle):  # a lane place came free: idle workers notice at their next poll
                        idle.discard(w)
                        at(t + poll_rng.uniform(0, args.poll_s), "free", w)
                at(t, "free", who)
        engine.dispose()
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=8, help="Worker processes serving the device.")
    parser.add_argument("--people", type=int, default=30, help="People submitting.")
    parser.add_argument("--people-load", type=float, default=0.35, help="Share of the workers people keep busy.")
    parser.add_argument("--person-job-s", type=float, default=20.0, help="A person's job's mean duration.")
    parser.add_argument("--program-job-s", type=float, default=8.0, help="A program's job's mean duration.")
    parser.add_argument("--backlog", type=int, default=64, help="Program jobs kept queued (a batch).")
    parser.add_argument("--poll-s", type=float, default=0.1, help="An idle worker's poll interval.")
    parser.add_argument(
        "--reserve-share", type=float, default=PROGRAM_RESERVE_SHARE, help="Workers kept idle for people (share)."
    )
    parser.add_argument(
        "--max-preemptions", type=int, default=PREEMPT_MAX, help="Times one program job may be preempted (0: never)."
    )
    parser.add_argument(
        "--kill-s", type=float, default=0.1, help="How long a killed run holds the GPU after a preemption."
    )
    parser.add_argument("--hours", type=float, default=2.0, help="Simulated hours per scenario.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    scenarios = [
        ("people alone", False, args.reserve_share, 0),
        (f"program, reserve {args.reserve_share:g}, preempt", True, args.reserve_share, args.max_preemptions),
        (f"program, reserve {args.reserve_share:g} alone", True, args.reserve_share, 0),
        ("program, no lane, preempt", True, 0.0, args.max_preemptions),
        ("program, neither", True, 0.0, 0),
    ]
    outcomes = []
    for name, program, reserve, preempt in scenarios:
        outcomes.append(simulate(args, name, program=program, reserve=reserve, preempt=preempt))
        print(f"simulated: {name}", file=sys.stderr, flush=True)
    rows = [o.summary(args.hours, args.workers) for o in outcomes]
    base = float(rows[0]["people_wait_p95_s"]) or 1e-9
    for row in rows:
        row["people_p95_growth"] = round(float(row["people_wait_p95_s"]) / base - 1, 3)
    if args.json:
        print(json.dumps({"parameters": vars(args), "scenarios": rows}, indent=2))
        return
    print(f"{args.workers} workers on {DEVICE}, {args.people} people keeping {args.people_load:.0%} of them busy "
          f"(jobs {args.person_job_s:g} s mean), program jobs {args.program_job_s:g} s mean with {args.backlog} "
          f"queued, poll {args.poll_s:g} s, at most {args.max_preemptions} preemptions a job, kill {args.kill_s:g} s, "
          f"{args.hours:g} simulated hours, seed {args.seed}")  # fmt: skip
    header = f"{'scenario':32} {'people':>6} {'p50 s':>7} {'p95 s':>7} {'p99 s':>7} {'mean s':>7} {'p95 growth':>10} "
    print(header + f"{'program/h':>10} {'busy':>5} {'preempted':>9} {'wasted':>6}")
    for r in rows:
        print(f"{r['scenario']:32} {r['people_jobs']:>6} {r['people_wait_p50_s']:>7} {r['people_wait_p95_s']:>7} "
              f"{r['people_wait_p99_s']:>7} {r['people_wait_mean_s']:>7} {r['people_p95_growth']:>+10.1%} "
              f"{r['program_jobs_per_hour']:>10} {r['utilisation']:>5} {r['preempted_runs']:>9} "
              f"{r['wasted_device_share']:>6.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
