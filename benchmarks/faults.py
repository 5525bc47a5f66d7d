"""The queue under faults (issue 11): PostgreSQL, 3 worker processes (fake launcher), a fixed fault schedule.

Runs the same load twice in a database of its own: once without faults (the baseline), once with this schedule
(seconds after the first submission; the lease is 5 s):

    t=3    every backend of the database terminated (pg_terminate_backend)
    t=5    SIGKILL worker 0 (restarted 1 s later, same spool folder)
    t=7    worker 1 frozen (SIGSTOP) for 8 s, longer than its lease, then resumed (SIGCONT)
    t=9    SIGKILL worker 2 (restarted 1 s later)
    t=11   every backend terminated again
    t=18   the database refuses every connection for 8 s (ALLOW_CONNECTIONS false + backends terminated)
    t=30   SIGKILL worker 0 again (restarted 1 s later)

While it runs, 4 submitter threads send 3 waves of submissions (one wave before the faults, one during the
outage, one after it) and a reader polls submission status. Then it reports, for each run:

- submissions lost (accepted by the service but missing, or without a job): must be 0;
- results stored twice (more than one run row per job and kind): must be 0;
- jobs stranded (still queued or running when the queue should be empty): must be 0;
- runs executed twice: launcher calls beyond the runs stored, each explained by the job's history (its worker was
  killed or frozen mid-run, so the run was started again by the next holder);
- time to take over a killed or frozen worker's job: from the fault to the next holder's start (target: at most
  the lease + 5 s);
- drain time with faults against the baseline.

    .venv/bin/python benchmarks/faults.py                        # 90 ranked submissions, ~2 x 40 s
    .venv/bin/python benchmarks/faults.py -n 150 --delay 0.2

PostgreSQL: the trust-auth server on 127.0.0.1:5432 (``KERNELCUP_BENCH_POSTGRES_URL``); the script creates and drops
a database ``kc_faults_<pid>`` of its own, so blocking its connections affects nobody else. Every wait is bounded
(``--timeout`` per run, default 240 s).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

from leaderboards.db import Database, make_engine, upgrade
from leaderboards.models import Job, JobEvent, JobStatus, Run, Submission
from leaderboards.problems import Problem, Task
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings

DEFAULT_URL = os.environ.get("KERNELCUP_BENCH_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")
REFERENCE = (
    "def generate_input(size, seed):\n    return size\n\ndef ref_kernel(d):\n    return d\n\n"
    "def check_implementation(d, o):\n    return True, ''\n"
)
LEASE_S = 5.0
WORKERS = 3
SCHEDULE = [
    (3.0, "terminate", None),
    (5.0, "kill", 0),
    (7.0, "freeze", 1),
    (9.0, "kill", 2),
    (11.0, "terminate", None),
    (18.0, "block", None),
    (30.0, "kill", 0),
]
FREEZE_S = 8.0
BLOCK_S = 8.0


# -- a worker process --------------------------------------------------------------------------------------------


def worker_main(url: str, worker_id: str, log_path: str, spool: str, delay_s: float) -> None:
    """One worker process: the real Worker, the fake launcher, every launcher call appended to ``log_path``."""
    from leaderboards.spool import ResultSpool
    from leaderboards.worker import Worker, WorkerSettings
    from runners.launchers.fake import FakeLauncher

    class Logged(FakeLauncher):
        async def run(self, request, job):  # type: ignore[no-untyped-def]
            line = json.dumps({"worker": worker_id, "seed": request.seed is not None, "t": time.time()}) + "\n"
            fd = os.open(
                log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT
            )  # one write per launch (a SIGKILL may follow)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
            return await super().run(request, job)

    db = Database(make_engine(url))
    service = LeaderboardService(db, CoreSettings(_env_file=None))
    settings = WorkerSettings(
        _env_file=None,
        lease_s=LEASE_S,
        heartbeat_s=1.0,
        poll_s=0.05,
        backoff_base_s=0.5,
        backoff_max_s=2.0,
        stop_grace_s=2.0,
        db_retry_s=30.0,
    )
    launcher = Logged(delay_s=delay_s, progress=())
    worker = Worker(service, lambda device: launcher, settings, worker_id=worker_id, spool=ResultSpool(Path(spool)))
    stop = asyncio.Event()

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        await worker.run(stop)

    asyncio.run(serve())


# -- the driver -----------------------------------------------------------------------------------------------------


@dataclass
class Fault:
    at: float
    kind: str
    worker: str = ""
    held: list[int] = field(default_factory=list)
    """Jobs the worker held when it was killed or frozen (their takeover is measured)."""


class Pool:
    """The worker processes; restarted ones keep their index (and spool folder), with a new worker id."""

    def __init__(self, url: str, tmp: Path, delay_s: float) -> None:
        self.url, self.tmp, self.delay_s = url, tmp, delay_s
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.ids: dict[int, str] = {}
        self.generation = 0
        self.log = tmp / "launches.jsonl"

    def start(self, index: int) -> None:
        self.generation += 1
        wid = f"w{index}-g{self.generation}"
        self.ids[index] = wid
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        argv = [sys.executable, __file__, "--worker", self.url, wid, str(self.log), str(self.tmp / f"spool-{index}")]
        with open(self.tmp / f"{wid}.log", "wb") as stderr:  # the child keeps its own copy of the descriptor
            self.procs[index] = subprocess.Popen(
                [*argv, str(self.delay_s)], env=env, stdout=subprocess.DEVNULL, stderr=stderr
            )

    def signal(self, index: int, sig: int) -> None:
        with_pid = self.procs[index]
        if with_pid.poll() is None:
            os.kill(with_pid.pid, sig)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def launches(self) -> list[dict[str, object]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def admin_engine(url: str):  # type: ignore[no-untyped-def]
    return create_engine(url, isolation_level="AUTOCOMMIT")


def terminate_backends(admin_url: str, dbname: str) -> int:
    engine = admin_engine(admin_url)
    with engine.connect() as conn:
        n = conn.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = :db AND pid <> pg_backend_pid()"
            ),
            {"db": dbname},
        ).scalar()
    engine.dispose()
    return int(n or 0)


def allow_connections(admin_url: str, dbname: str, allow: bool) -> None:
    engine = admin_engine(admin_url)
    with engine.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{dbname}" ALLOW_CONNECTIONS {"true" if allow else "false"}'))
    engine.dispose()


def held_by(db: Database, worker_id: str) -> list[int]:
    with db.transaction() as s:
        return list(
            s.scalars(
                select(Job.id).where(Job.status == JobStatus.RUNNING.value, Job.lease_owner.like(f"{worker_id}#%"))
            )
        )


def run_once(args: argparse.Namespace, admin_url: str, faults: bool) -> dict[str, object]:
    dbname = f"kc_faults_{os.getpid()}_{secrets.token_hex(3)}"
    with admin_engine(admin_url).connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{dbname}"'))
    url = make_url(admin_url).set(database=dbname).render_as_string(hide_password=False)
    tmp = Path(tempfile.mkdtemp(prefix="kc-faults-"))
    engine = make_engine(url)
    upgrade(engine)
    db = Database(engine)
    pool = Pool(url, tmp, args.delay)
    try:
        return drive(args, db, pool, admin_url, dbname, faults)
    finally:
        pool.stop_all()
        db.dispose()
        allow_connections(admin_url, dbname, True)
        terminate_backends(admin_url, dbname)
        with admin_engine(admin_url).connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{dbname}"'))


def drive(
    args: argparse.Namespace, db: Database, pool: Pool, admin_url: str, dbname: str, faults: bool
) -> dict[str, object]:
    core = CoreSettings(
        _env_file=None,
        rate_limit_per_hour=None,
        ranked_rate_limit_per_hour=None,
        max_new_files_per_day=None,
        max_pending_jobs_per_user=10_000,
    )
    service = LeaderboardService(db, core)
    task = Task(description="bench", tests=[{"size": 1, "seed": 1}], benchmarks=[{"size": 2, "seed": 2}])
    problem = Problem(path=Path("bench"), task=task, files={"reference.py": REFERENCE})
    service.create_leaderboard(problem, name="bench", deadline=datetime.now(UTC) + timedelta(days=1), devices=["cpu"])
    for i in range(WORKERS):
        pool.start(i)

    accepted: list[int] = []
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    waves = [0.0, 19.0, 28.0]  # before the faults, inside the outage, after it
    per_wave = [args.n // len(waves) + (1 if w < args.n % len(waves) else 0) for w in range(len(waves))]
    t0 = time.monotonic()
    reading = threading.Event()

    def submitter(t: int) -> None:
        for w, at in enumerate(waves):
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            for k in range(t, per_wave[w], 4):
                code = f"def custom_kernel(d):\n    return d  # {w}-{k}\n".encode()
                deadline = time.monotonic() + 60
                while True:  # what a client does while the database is down: try again, bounded
                    try:
                        r = service.submit(UserRef(f"user{k % 12}"), "s.py", code, "bench", ["cpu"], "ranked")
                    except Exception as exc:
                        with lock:
                            errors[type(exc).__name__] += 1
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.5)
                        continue
                    with lock:
                        accepted.append(r.submission_id)
                    break

    def reader() -> None:
        while not reading.is_set():
            with lock:
                some = accepted[-5:]
            for sid in some:
                with contextlib.suppress(Exception):  # the database may be down: a reader just tries again
                    service.submission_status(sid)
            time.sleep(0.2)

    threads = [threading.Thread(target=submitter, args=(t,), daemon=True) for t in range(4)]
    threads.append(threading.Thread(target=reader, daemon=True))
    for th in threads:
        th.start()

    done_faults: list[Fault] = []
    schedule = list(SCHEDULE) if faults else []
    pending_actions: list[tuple[float, str, int | None]] = []
    deadline = t0 + args.timeout
    drained_at = None
    while time.monotonic() < deadline:
        now = time.monotonic() - t0
        while schedule and schedule[0][0] <= now:
            _, kind, index = schedule.pop(0)
            fault = Fault(now, kind)
            if kind in ("kill", "freeze"):
                assert index is not None
                fault.worker = pool.ids[index]
                fault.held = held_by(db, fault.worker)
                if kind == "kill":
                    pool.signal(index, signal.SIGKILL)
                    pending_actions.append((now + 1.0, "restart", index))
                else:
                    pool.signal(index, signal.SIGSTOP)
                    pending_actions.append((now + FREEZE_S, "resume", index))
            elif kind == "terminate":
                fault.worker = f"{terminate_backends(admin_url, dbname)} backends"
            elif kind == "block":
                allow_connections(admin_url, dbname, False)
                fault.worker = f"{terminate_backends(admin_url, dbname)} backends, {BLOCK_S:g} s"
                pending_actions.append((now + BLOCK_S, "unblock", None))
            fault.at = now
            done_faults.append(fault)
        for action in [a for a in pending_actions if a[0] <= now]:
            pending_actions.remove(action)
            _, what, index = action
            if what == "restart":
                pool.start(index)  # type: ignore[arg-type]
            elif what == "resume":
                pool.signal(index, signal.SIGCONT)  # type: ignore[arg-type]
            else:
                allow_connections(admin_url, dbname, True)
        submitters_done = not any(th.is_alive() for th in threads[:-1])
        if submitters_done and not schedule and not pending_actions:
            try:
                with db.transaction() as s:
                    left = s.scalar(
                        select(func.count())
                        .select_from(Job)
                        .where(Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)))
                    )
            except Exception:
                left = -1
            if left == 0:
                drained_at = time.monotonic() - t0
                break
        time.sleep(0.05)
    reading.set()
    wall_start = datetime.now(UTC) - timedelta(seconds=time.monotonic() - t0)
    return measure(db, pool, accepted, errors, done_faults, drained_at, wall_start)


def measure(
    db: Database,
    pool: Pool,
    accepted: list[int],
    errors: Counter[str],
    faults: list[Fault],
    drained_at: float | None,
    wall_start: datetime,
) -> dict[str, object]:
    with db.transaction() as s:
        subs = set(s.scalars(select(Submission.id)))
        jobs = {j.id: j for j in s.scalars(select(Job))}
        for j in jobs.values():
            s.expunge(j)
        runs = Counter((r.job_id, r.secret) for r in s.execute(select(Run.job_id, Run.secret)))
        started = s.execute(
            select(JobEvent.job_id, JobEvent.created_at, JobEvent.detail)
            .where(JobEvent.phase == "started")
            .order_by(JobEvent.id)
        ).all()
    jobs_of = Counter(j.submission_id for j in jobs.values())
    lost = [sid for sid in accepted if sid not in subs or jobs_of[sid] != 1]
    stranded = [j.id for j in jobs.values() if j.status in (JobStatus.QUEUED.value, JobStatus.RUNNING.value)]
    failed = Counter(j.status for j in jobs.values() if j.status != JobStatus.SUCCEEDED.value)
    launches = pool.launches()
    extra = len(launches) - sum(runs.values())

    takeovers: list[float] = []
    for fault in faults:
        at = wall_start + timedelta(seconds=fault.at)
        for job_id in fault.held:
            nxt = [t for jid, t, _ in started if jid == job_id and t > at]
            if nxt:
                takeovers.append((min(nxt) - at).total_seconds())
    attempts = Counter(j.attempts for j in jobs.values())
    return {
        "accepted": len(accepted),
        "submit_errors_retried": dict(errors),
        "lost": len(lost),
        "stored_twice": sum(1 for n in runs.values() if n > 1),
        "stranded": len(stranded),
        "not_succeeded": dict(failed),
        "runs_stored": sum(runs.values()),
        "launches": len(launches),
        "extra_launches": extra,
        "jobs_with_more_than_one_claim": sum(n for a, n in attempts.items() if a > 1),
        "takeovers_s": sorted(round(t, 2) for t in takeovers),
        "drain_s": drained_at,
        "faults": [(round(f.at, 1), f.kind, f.worker, f.held) for f in faults],
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        url, wid, log, spool, delay = sys.argv[2:7]
        worker_main(url, wid, log, spool, float(delay))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", default=DEFAULT_URL, help="a PostgreSQL URL of a superuser (trust auth)")
    ap.add_argument("-n", type=int, default=90, help="ranked submissions (3 waves)")
    ap.add_argument("--delay", type=float, default=0.25, help="fake runner time per run (s)")
    ap.add_argument("--timeout", type=float, default=240.0, help="bound of each run (s)")
    args = ap.parse_args()

    results = {}
    for name, faults in (("baseline", False), ("faults", True)):
        print(f"{name}: {args.n} ranked submissions, {WORKERS} workers, fake runner {args.delay:g} s/run …", flush=True)
        results[name] = run_once(args, args.database_url, faults)
        print(json.dumps(results[name], indent=1, default=str), flush=True)

    base, hit = results["baseline"], results["faults"]
    ok = {
        "submissions lost: 0": hit["lost"] == 0 and base["lost"] == 0 and hit["accepted"] == args.n,
        "results stored twice: 0": hit["stored_twice"] == 0,
        "jobs stranded: 0": hit["stranded"] == 0 and hit["drain_s"] is not None,
        "every job succeeded": not hit["not_succeeded"],
        f"takeover of a killed/frozen worker's job <= lease + 5 s ({LEASE_S + 5:g} s)": all(
            t <= LEASE_S + 5
            for t in hit["takeovers_s"]  # type: ignore[attr-defined]
        ),
    }
    print()
    print(f"drain time: baseline {base['drain_s']:.1f} s, with faults {hit['drain_s'] or float('nan'):.1f} s")
    take = hit["takeovers_s"] or [float("nan")]
    print(
        f"takeover after a kill/freeze: median {statistics.median(take):.1f} s, max {max(take):.1f} s "  # type: ignore[arg-type]
        f"(lease {LEASE_S:g} s) over {len(hit['takeovers_s'])} held jobs"  # type: ignore[arg-type]
    )
    print(
        f"runs executed twice (launches beyond stored runs): {hit['extra_launches']} "
        f"(baseline {base['extra_launches']}); jobs claimed more than once: {hit['jobs_with_more_than_one_claim']}"
    )
    for name, passed in ok.items():
        print(f"  {'ok  ' if passed else 'FAIL'} {name}")
    return 0 if all(ok.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
