"""Platform overhead per submission beyond the runner's own time, and enqueue -> claim latency.

An idle worker (own thread and event loop, the real local launcher, default settings) serves a fresh database;
submissions are made one at a time through the service, and the submitter waits for the result the way
`kernelcup submit` does (polling the database). For each submission:

- runner time: the time spent inside ``launcher.run`` (the harness's own work: start-up, compile, tests);
- end-to-end: from just before ``service.submit`` to the moment the submitter sees the job finished;
- overhead = end-to-end - runner time (queueing, claiming, request building, storing, events, polling);
- enqueue -> claim: ``jobs.started_at - jobs.created_at`` (one clock: this machine's).

Targets (issue 2): overhead <= 1 s, enqueue -> claim <= 200 ms.

    .venv/bin/python benchmarks/platform_overhead.py                       # SQLite in a temp dir, local launcher
    .venv/bin/python benchmarks/platform_overhead.py --database-url postgresql+psycopg2://postgres@127.0.0.1/test
    .venv/bin/python benchmarks/platform_overhead.py --launcher fake       # platform only, no harness
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, text

from leaderboards.db import Database, make_engine, upgrade
from leaderboards.models import Job, JobStatus
from leaderboards.problems import Problem, Task
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.base import Launcher

REFERENCE = """\
import torch

def generate_input(size, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(size, generator=g)

def ref_kernel(data):
    return data * 2

def check_implementation(data, output):
    ok = torch.allclose(output, data * 2)
    return ok, "" if ok else "mismatch"
"""
SOLUTION = b"def custom_kernel(data):\n    return data * 2\n"


class TimedLauncher(Launcher):
    """Wraps a launcher and records how long each run spent inside it (the runner's own time)."""

    def __init__(self, inner: Launcher) -> None:
        self.inner = inner
        self.name = inner.name
        self.times: list[float] = []

    @property
    def allows_unsandboxed(self) -> bool:
        return self.inner.allows_unsandboxed

    @property
    def wait_margin_s(self) -> float:
        return self.inner.wait_margin_s

    def cannot_serve(self, device_name: str) -> str | None:
        return self.inner.cannot_serve(device_name)

    async def run(self, request, job):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return await self.inner.run(request, job)
        finally:
            self.times.append(time.perf_counter() - t)

    async def check(self) -> str:
        return await self.inner.check()


def open_db(url: str | None, tmp: Path) -> tuple[Database, str | None]:
    if url is None:
        engine = make_engine(f"sqlite:///{tmp / 'overhead.sqlite3'}")
        upgrade(engine)
        return Database(engine), None
    schema = f"kc_bench_{os.getpid()}_{secrets.token_hex(3)}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    admin.dispose()
    engine = make_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    upgrade(engine)
    return Database(engine), schema


def drop_schema(url: str, schema: str) -> None:
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    admin.dispose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", default=None, help="PostgreSQL URL (a temporary schema is used); default SQLite")
    ap.add_argument("--launcher", choices=("local", "fake"), default="local")
    ap.add_argument("-n", type=int, default=10, help="submissions (one at a time)")
    ap.add_argument("--mode", default="test", choices=("test", "benchmark", "ranked"))
    ap.add_argument("--poll", type=float, default=0.02, help="how often the submitter polls for the result (s)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        db, schema = open_db(args.database_url, tmp)
        try:
            return run(db, args)
        finally:
            db.dispose()
            if schema:
                drop_schema(args.database_url, schema)


def run(db: Database, args: argparse.Namespace) -> int:
    core = CoreSettings(_env_file=None, data_dir=None, rate_limit_per_hour=None)
    service = LeaderboardService(db, core)
    task = Task(
        description="double a vector",
        tests=[{"size": 1000, "seed": 1}],
        benchmarks=[{"size": 100_000, "seed": 2}],
        test_timeout_s=60,
    )
    problem = Problem(path=Path("double"), task=task, files={"reference.py": REFERENCE})
    from datetime import UTC, datetime, timedelta

    service.create_leaderboard(problem, name="double", deadline=datetime.now(UTC) + timedelta(days=1), devices=["cpu"])

    if args.launcher == "local":
        from runners.launchers.local import LocalLauncher
        from runners.settings import RunnerSettings

        inner = LocalLauncher(RunnerSettings(_env_file=None, allow_unsandboxed=True))
    else:
        from runners.launchers.fake import FakeLauncher

        inner = FakeLauncher()
    launcher = TimedLauncher(inner)
    settings = WorkerSettings(_env_file=None)  # the defaults: poll 0.1 s, heartbeat 10 s
    worker = Worker(service, lambda device: launcher, settings)
    stop = threading.Event()

    def serve() -> None:
        asyncio.run(worker.run(until=stop.is_set))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    time.sleep(1.0)  # the worker is idle, polling

    rows = []
    for i in range(args.n + 1):  # the first one warms up imports and caches; not counted
        t0 = time.perf_counter()
        receipt = service.submit(
            UserRef(f"u{i}"), "sol.py", SOLUTION + f"# {i}\n".encode(), "double", ["cpu"], args.mode
        )
        job_id = receipt.jobs[0].job_id
        while True:
            with db.transaction() as s:
                job = s.get(Job, job_id)
                assert job is not None
                if JobStatus(job.status).finished:
                    break
            time.sleep(args.poll)
        total = time.perf_counter() - t0
        runner = sum(launcher.times[-(2 if args.mode == "ranked" else 1) :])
        claim_ms = (job.started_at - job.created_at).total_seconds() * 1000
        if i:
            rows.append((total, runner, total - runner, claim_ms, job.status, job.verdict))
        time.sleep(0.3)  # idle again
    stop.set()
    thread.join(30)

    print(f"database: {db.dialect}; launcher: {args.launcher}; mode: {args.mode}; n={len(rows)}")
    print("| # | end-to-end s | runner s | overhead s | enqueue->claim ms | status |")
    print("|---|---|---|---|---|---|")
    for k, (total, runner, over, claim, status, verdict) in enumerate(rows, 1):
        print(f"| {k} | {total:.3f} | {runner:.3f} | {over:.3f} | {claim:.0f} | {status} {verdict} |")
    overs = [r[2] for r in rows]
    claims = [r[3] for r in rows]
    print(
        f"overhead: median {statistics.median(overs):.3f} s, max {max(overs):.3f} s (target <= 1 s); "
        f"enqueue->claim: median {statistics.median(claims):.0f} ms, max {max(claims):.0f} ms (target <= 200 ms)"
    )
    ok = max(overs) <= 1.0 and statistics.median(claims) <= 200 and all(r[4] == "succeeded" for r in rows)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
