"""500 submissions from 20 threads at once against PostgreSQL, served by 4 worker processes (fake launcher).

Checks (issue 2): every submission is stored exactly once (one public and, ranked, one secret run per job), no job
is run twice (each worker process logs every launcher call; no (job, kind) appears twice across them), none is
lost (every job succeeded). Prints throughput and the enqueue -> claim latency under load.

    .venv/bin/python benchmarks/concurrent_submissions.py                      # 500 x ranked, 20 threads, 4 workers
    .venv/bin/python benchmarks/concurrent_submissions.py --database-url sqlite:////tmp/kc.sqlite3 -n 100

PostgreSQL default: the trust-auth server on 127.0.0.1:5432, database ``test``, in a temporary schema.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, func, select, text

from leaderboards.db import Database, make_engine, upgrade
from leaderboards.models import Job, JobStatus, Run
from leaderboards.problems import Problem, Task
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings

DEFAULT_URL = "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
REFERENCE = (
    "def generate_input(size, seed):\n    return size\n\ndef ref_kernel(d):\n    return d\n\n"
    "def check_implementation(d, o):\n    return True, ''\n"
)


def engine_for(url: str, schema: str | None):  # type: ignore[no-untyped-def]
    if schema is None:
        return make_engine(url)
    return make_engine(url, connect_args={"options": f"-csearch_path={schema}"}, pool_size=25, max_overflow=10)


def worker_process(url: str, schema: str | None, index: int, log_path: str, stop, delay_s: float, conc: int) -> None:  # type: ignore[no-untyped-def]
    from leaderboards.worker import Worker, WorkerSettings
    from runners.launchers.fake import FakeLauncher

    db = Database(engine_for(url, schema))
    service = LeaderboardService(db, CoreSettings(_env_file=None))
    calls = []

    class Logged(FakeLauncher):
        async def run(self, request, job):  # type: ignore[no-untyped-def]
            calls.append(request.seed is not None)
            return await super().run(request, job)

    launcher = Logged(delay_s=delay_s, progress=())
    settings = WorkerSettings(_env_file=None, concurrency=conc, poll_s=0.05, heartbeat_s=2, lease_s=30)
    worker = Worker(service, lambda device: launcher, settings, worker_id=f"bench-{index}")
    asyncio.run(worker.run(until=stop.is_set))
    # Every launcher call, by (job, kind): the reports list the claims; the launcher's requests, the calls.
    runs = []
    for report in worker.reports:
        runs.extend((report.job_id, r.secret) for r in report.recorded)
    Path(log_path).write_text(json.dumps({"calls": len(calls), "stored": runs, "reports": len(worker.reports)}))
    db.dispose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", default=DEFAULT_URL)
    ap.add_argument("-n", type=int, default=500, help="submissions")
    ap.add_argument("--threads", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4, help="worker processes")
    ap.add_argument("--concurrency", type=int, default=1, help="jobs at once per worker process")
    ap.add_argument("--mode", default="ranked", choices=("test", "ranked"))
    ap.add_argument("--delay", type=float, default=0.005, help="fake runner time per run (s)")
    args = ap.parse_args()

    postgres = args.database_url.startswith("postgresql")
    schema = f"kc_bench_{os.getpid()}_{secrets.token_hex(3)}" if postgres else None
    if schema:
        admin = create_engine(args.database_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        admin.dispose()
    try:
        engine = engine_for(args.database_url, schema)
        upgrade(engine)
        return run(Database(engine), args, schema)
    finally:
        if schema:
            admin = create_engine(args.database_url, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            admin.dispose()


def run(db: Database, args: argparse.Namespace, schema: str | None) -> int:
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

    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-"))
    logs = [tmp / f"worker-{i}.json" for i in range(args.workers)]
    procs = [
        ctx.Process(
            target=worker_process,
            args=(args.database_url, schema, i, str(logs[i]), stop, args.delay, args.concurrency),
        )
        for i in range(args.workers)
    ]
    for p in procs:
        p.start()

    ids: list[int] = []
    errors: list[str] = []
    lock = threading.Lock()
    per_thread = [args.n // args.threads + (1 if t < args.n % args.threads else 0) for t in range(args.threads)]
    barrier = threading.Barrier(args.threads)

    def submitter(t: int) -> None:
        barrier.wait()
        for k in range(per_thread[t]):
            try:
                code = f"def custom_kernel(d):\n    return d  # {t}-{k}\n".encode()
                r = service.submit(UserRef(f"user{t}"), "s.py", code, "bench", ["cpu"], args.mode)
                with lock:
                    ids.append(r.submission_id)
            except Exception as exc:
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(args.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    t_submitted = time.perf_counter() - t0

    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        with db.transaction() as s:
            left = s.scalar(
                select(func.count())
                .select_from(Job)
                .where(Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)))
            )
        if not left:
            break
        time.sleep(0.2)
    t_done = time.perf_counter() - t0
    stop.set()
    for p in procs:
        p.join(60)

    with db.transaction() as s:
        jobs = s.execute(select(Job.id, Job.status, Job.attempts, Job.created_at, Job.started_at)).all()
        runs = Counter((r.job_id, r.secret) for r in s.execute(select(Run.job_id, Run.secret)))
    stored_by_workers: Counter[tuple[int, bool]] = Counter()
    calls = 0
    for log in logs:
        data = json.loads(log.read_text())
        calls += data["calls"]
        stored_by_workers.update((j, bool(sec)) for j, sec in data["stored"])
    kinds = 2 if args.mode == "ranked" else 1
    claims = sorted((j.started_at - j.created_at).total_seconds() * 1000 for j in jobs if j.started_at)

    checks = {
        "every submission accepted by the service": len(ids) == args.n and not errors,
        "one job per submission": len(jobs) == args.n,
        "none lost (every job succeeded)": all(j.status == JobStatus.SUCCEEDED.value for j in jobs),
        "exactly one result per run kind": len(runs) == args.n * kinds and set(runs.values()) == {1},
        "no job run twice (launcher calls == runs)": calls == args.n * kinds,
        "no result stored twice by workers": set(stored_by_workers.values()) == {1}
        and len(stored_by_workers) == args.n * kinds,
        "every job claimed once": all(j.attempts == 1 for j in jobs),
    }
    print(
        f"{db.dialect}: {args.n} {args.mode} submissions from {args.threads} threads, {args.workers} worker "
        f"processes x {args.concurrency}; fake runner {args.delay * 1000:.0f} ms/run"
    )
    print(
        f"submitted in {t_submitted:.2f} s ({args.n / t_submitted:.0f}/s); all done after {t_done:.2f} s "
        f"({args.n / t_done:.0f} jobs/s, {calls} launcher calls)"
    )
    if claims:
        print(
            f"enqueue->claim under load: median {statistics.median(claims):.0f} ms, "
            f"p95 {claims[int(0.95 * (len(claims) - 1))]:.0f} ms, max {claims[-1]:.0f} ms"
        )
    for name, ok in checks.items():
        print(f"  {'ok ' if ok else 'FAIL'} {name}")
    if errors:
        print("submit errors:", *sorted(set(errors))[:5], sep="\n  ")
    ok = all(checks.values())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
