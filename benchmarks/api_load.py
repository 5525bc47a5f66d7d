"""The HTTP API under load on PostgreSQL (issue 13): readers of a big ranking and submitters at once.

Set-up, in a schema of its own (dropped at the end): one leaderboard (device H100) with --runs ranked runs
(COPY-loaded as in ``ranking_query.py``: RUNS/2 submissions of --users users, each with a public and a secret run)
and its ranking built; then

- ``kernelcup serve --no-worker --workers 2`` (a subprocess, on a loopback port, default settings otherwise);
- one ``kernelcup`` worker process with the fake launcher (no harness run), ``--concurrency`` jobs at once;
- a process of --readers clients (a minimal keep-alive HTTP client: 200 httpx clients in one Python process
  would cost more CPU than the server they measure), each reading the ranking
  (``GET …/rankings?device=H100&limit=100``) in a loop with a think time of --think seconds on average (uniform
  0.5x–1.5x), until the submissions are done;
- a process of --submitters clients posting --submissions ranked submissions in all (multipart, each with its own
  account and token), each pausing --submit-think seconds on average before each one (0: as fast as the answers
  come, which saturates the machine: then the latency measures the queue in front of two cores, not the API);
- (issue 37) --history-readers clients reading the score history (``GET …/history?device=H100``, the route's
  defaults) back to back, with no pause, for as long as the others run: what two outside testers did to a board of
  a million runs. Their answers' size (bytes, points) and latency are reported, and the other clients' latency is
  what it costs them (compare a run with ``--history-readers 0``);
- before any of that, the leaderboard page's first render (``GET /leaderboards/bench``, once per uvicorn worker:
  nothing of it cached yet), timed.

Reported: the latency of each request as its client saw it (p50, p90, p99, max), throughput, and the checks that
every submission was stored once and run exactly once (one launcher call per run kind, one stored run each, every
job succeeded at its first attempt). Exit status 0 when the checks pass and the targets (rankings p99 <= 50 ms,
submit p99 <= 150 ms) are met.

    .venv/bin/python benchmarks/api_load.py                          # the issue's sizes against 127.0.0.1:5432/test
    .venv/bin/python benchmarks/api_load.py --runs 10000 --submissions 100 --readers 50
    .venv/bin/python benchmarks/api_load.py --runs 400000 --history-readers 2     # issue 37's case, scaled down
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import httpx  # noqa: E402
from sqlalchemy import create_engine, func, select, text  # noqa: E402

from leaderboards.db import Database, make_engine, upgrade  # noqa: E402
from leaderboards.models import Job, JobStatus, Leaderboard, Run, Submission  # noqa: E402
from leaderboards.results import UserRef  # noqa: E402
from leaderboards.service import LeaderboardService  # noqa: E402
from leaderboards.settings import CoreSettings  # noqa: E402

DEFAULT_URL = os.environ.get("KERNELCUP_BENCH_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")
DEVICE = "H100"
BOARD = "bench"
CODE = "def custom_kernel(data):\n    return data  # {tag}\n"


def percentiles(ms: list[float]) -> str:
    if not ms:
        return "no requests"
    ms = sorted(ms)

    def p(q: float) -> float:
        return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]

    return (
        f"p50 {statistics.median(ms):.1f} ms, p90 {p(0.90):.1f} ms, p99 {p(0.99):.1f} ms, max {ms[-1]:.1f} ms "
        f"(n={len(ms)})"
    )


def p99(ms: list[float]) -> float:
    ms = sorted(ms)
    return ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))] if ms else float("inf")


# -- client processes ----------------------------------------------------------------------------------------------


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, path: str) -> int:
    """One keep-alive HTTP/1.1 GET on an open connection; the status. A minimal client on purpose: 200 httpx
    clients in one Python process cost more CPU than the server they measure, on a 2-core machine."""
    return (await _get_body(reader, writer, host, path))[0]


async def _get_body(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, path: str
) -> tuple[int, bytes]:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return status, await reader.readexactly(length)


def history_readers(base: str, n: int, stop, out: str) -> None:  # type: ignore[no-untyped-def]
    """``n`` clients reading the score history back to back (no think time) until ``stop``: latency, answer bytes
    and points (``score_ns`` fields) of each read."""
    latencies: list[float] = []
    sizes: list[int] = []
    points: list[int] = []
    errors: Counter[str] = Counter()
    host = base.removeprefix("http://")
    address, port = host.rsplit(":", 1)
    path = f"/api/v1/leaderboards/{BOARD}/history?device={DEVICE}"

    async def client() -> None:
        reader, writer = await asyncio.open_connection(address, int(port), limit=2**26)
        while not stop.is_set():
            t = time.perf_counter()
            try:
                status, body = await asyncio.wait_for(_get_body(reader, writer, host, path), 120)
                if status != 200:
                    errors[str(status)] += 1
                    await asyncio.sleep(0.1)
                else:
                    latencies.append((time.perf_counter() - t) * 1000)
                    sizes.append(len(body))
                    points.append(body.count(b'"score_ns"'))
            except (OSError, asyncio.IncompleteReadError, TimeoutError, asyncio.LimitOverrunError) as exc:
                errors[type(exc).__name__] += 1
                writer.close()
                reader, writer = await asyncio.open_connection(address, int(port), limit=2**26)
        writer.close()

    async def main() -> None:
        await asyncio.gather(*(client() for _ in range(n)))

    asyncio.run(main())
    Path(out).write_text(json.dumps({"latencies": latencies, "sizes": sizes, "points": points, "errors": dict(errors)}))


def readers(base: str, n: int, think_s: float, stop, out: str) -> None:  # type: ignore[no-untyped-def]
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    host = base.removeprefix("http://")
    address, port = host.rsplit(":", 1)
    path = f"/api/v1/leaderboards/{BOARD}/rankings?device={DEVICE}&limit=100"

    async def client(i: int) -> None:
        rng = random.Random(i)
        await asyncio.sleep(rng.uniform(0, think_s))  # spread the first requests over one think time
        reader, writer = await asyncio.open_connection(address, int(port))
        while not stop.is_set():
            t = time.perf_counter()
            try:
                status = await asyncio.wait_for(_get(reader, writer, host, path), 30)
                if status != 200:
                    errors[str(status)] += 1
                else:
                    latencies.append((time.perf_counter() - t) * 1000)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
                errors[type(exc).__name__] += 1
                writer.close()
                reader, writer = await asyncio.open_connection(address, int(port))
            await asyncio.sleep(think_s * rng.uniform(0.5, 1.5))
        writer.close()

    async def main() -> None:
        await asyncio.gather(*(client(i) for i in range(n)))

    asyncio.run(main())
    Path(out).write_text(json.dumps({"latencies": latencies, "errors": dict(errors)}))


def submitters(base: str, tokens: list[str], total: int, think_s: float, out: str) -> None:
    latencies: list[float] = []
    ids: list[int] = []
    errors: Counter[str] = Counter()
    shares = [total // len(tokens) + (1 if i < total % len(tokens) else 0) for i in range(len(tokens))]

    async def client(c: httpx.AsyncClient, i: int) -> None:
        headers = {"Authorization": f"Bearer {tokens[i]}"}
        rng = random.Random(1000 + i)
        for k in range(shares[i]):
            if think_s:
                await asyncio.sleep(think_s * rng.uniform(0.5, 1.5))
            code = CODE.format(tag=f"{i}-{k}").encode()
            data = {"leaderboard": "bench", "devices": DEVICE, "mode": "ranked"}
            t = time.perf_counter()
            try:
                r = await c.post("/api/v1/submissions", headers=headers, files={"file": ("k.py", code)}, data=data)
                if r.status_code == 202:
                    latencies.append((time.perf_counter() - t) * 1000)
                    ids.append(r.json()["submission_id"])
                else:
                    errors[f"{r.status_code} {r.text[:120]}"] += 1
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] += 1

    async def main() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as c:
            await asyncio.gather(*(client(c, i) for i in range(len(tokens))))

    asyncio.run(main())
    Path(out).write_text(json.dumps({"latencies": latencies, "ids": ids, "errors": dict(errors)}))


def worker_proc(url: str, out: str, stop, delay_s: float, concurrency: int) -> None:  # type: ignore[no-untyped-def]
    """One kernelcup worker (default settings but for ``concurrency``) with the fake launcher; logs every call."""
    from leaderboards.worker import Worker, WorkerSettings
    from runners.launchers.fake import FakeLauncher

    db = Database(make_engine(url))
    service = LeaderboardService(db, CoreSettings(_env_file=None))
    calls: list[bool] = []

    class Logged(FakeLauncher):
        async def run(self, request, job):  # type: ignore[no-untyped-def]
            calls.append(request.seed is not None)
            return await super().run(request, job)

    launcher = Logged(delay_s=delay_s, progress=())
    worker = Worker(service, lambda _d: launcher, WorkerSettings(_env_file=None, concurrency=concurrency))
    asyncio.run(worker.run(until=stop.is_set))
    Path(out).write_text(json.dumps({"calls": len(calls)}))
    db.dispose()


# -- the run -------------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(db: Database, args: argparse.Namespace) -> list[str]:
    from ranking_query import _problem, load

    service = LeaderboardService(db, CoreSettings(_env_file=None))
    service.create_leaderboard(
        _problem(), name="bench", deadline=datetime.now(UTC) + timedelta(days=30), devices=[DEVICE]
    )
    with db.transaction() as s:
        lb = s.scalar(select(Leaderboard))
        assert lb is not None
        lb_id, fp = lb.id, lb.fingerprint
        s.execute(
            text("INSERT INTO submission_code (id, sha256, content) VALUES (1, :h, :c)"), {"h": "0" * 64, "c": b"x"}
        )
    load_s = load(db, lb_id, fp, args.users, args.runs, args.seed)
    ranked = service.rebuild_rankings("bench")
    with db.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    print(f"loaded {args.runs:,} ranked runs of {args.users:,} users in {load_s:.1f} s; {ranked:,} ranked on {DEVICE}")
    return [service.create_token(UserRef(f"submitter-{i}")).token for i in range(args.submitters)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=DEFAULT_URL, help="PostgreSQL URL (a schema of its own is created in it)")
    ap.add_argument("--runs", type=int, default=100_000, help="ranked runs already stored (public + secret)")
    ap.add_argument("--users", type=int, default=5_000)
    ap.add_argument("--readers", type=int, default=200)
    ap.add_argument("--think", type=float, default=1.0, help="readers' mean pause between two reads (s)")
    ap.add_argument("--submitters", type=int, default=20)
    ap.add_argument("--submissions", type=int, default=500)
    ap.add_argument(
        "--submit-think", type=float, default=1.0, help="submitters' mean pause before each submission (s); 0: flat out"
    )
    ap.add_argument("--api-workers", type=int, default=2, help="uvicorn worker processes")
    ap.add_argument("--concurrency", type=int, default=2, help="jobs at once in the one kernelcup worker")
    ap.add_argument("--delay", type=float, default=0.005, help="fake runner time per run (s)")
    ap.add_argument("--min-seconds", type=float, default=30.0, help="read for at least this long")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rankings-cache", type=float, default=None, help="KERNELCUP_API_RANKINGS_CACHE_S for the API")
    ap.add_argument(
        "--history-readers", type=int, default=2, help="clients reading the score history back to back (0: none)"
    )
    args = ap.parse_args()

    schema = f"kc_bench_{os.getpid()}_{secrets.token_hex(3)}"
    admin = create_engine(args.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in args.url else "?"
    url = f"{args.url}{sep}options={quote(f'-csearch_path={schema}')}"
    db = Database(make_engine(url))
    try:
        upgrade(db.engine)
        return run(db, url, schema, args)
    finally:
        db.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


def run(db: Database, url: str, schema: str, args: argparse.Namespace) -> int:
    tokens = prepare(db, args)
    tmp = Path(tempfile.mkdtemp(prefix="kc-api-bench-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELCUP_")}
    env.update(
        DATABASE_URL=url,
        KERNELCUP_MAX_PENDING_JOBS_PER_USER="10000",
        KERNELCUP_RANKED_RATE_LIMIT_PER_HOUR="none",  # each submitter sends 25 ranked ones (the default allows 10)
        KERNELCUP_MAX_NEW_FILES_PER_DAY="none",
        **({} if args.rankings_cache is None else {"KERNELCUP_API_RANKINGS_CACHE_S": str(args.rankings_cache)}),
        PYTHONPATH=os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")]),
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelcup.cli",
            "serve",
            "--port",
            str(port),
            "--no-worker",
            "--workers",
            str(args.api_workers),
        ],
        env=env,
        cwd=tmp,
        stdout=(tmp / "serve.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    ctx = mp.get_context("spawn")
    stop_worker, stop_readers = ctx.Event(), ctx.Event()
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            print((tmp / "serve.log").read_text())
            return 1
        first_renders = []
        for _ in range(args.api_workers):  # the page's first render, before anything of it is cached
            t = time.perf_counter()
            page = httpx.get(f"{base}/leaderboards/{BOARD}", timeout=120)
            first_renders.append((time.perf_counter() - t) * 1000)
            if page.status_code != 200:
                print(f"the leaderboard page answered {page.status_code}: {page.text[:300]}")
        for _ in range(args.api_workers * 4):  # every uvicorn process warm (pool, imports) before measuring
            httpx.get(f"{base}/api/v1/leaderboards/bench/rankings", params={"device": DEVICE})
        worker = ctx.Process(
            target=worker_proc, args=(url, str(tmp / "worker.json"), stop_worker, args.delay, args.concurrency)
        )
        reading = ctx.Process(target=readers, args=(base, args.readers, args.think, stop_readers, str(tmp / "r.json")))
        submitting = ctx.Process(
            target=submitters, args=(base, tokens, args.submissions, args.submit_think, str(tmp / "s.json"))
        )
        history = ctx.Process(
            target=history_readers, args=(base, args.history_readers, stop_readers, str(tmp / "h.json"))
        )
        worker.start()
        reading.start()
        if args.history_readers:
            history.start()
        time.sleep(min(args.think, 2.0))  # the readers are all reading before the submissions start
        t0 = time.perf_counter()
        submitting.start()
        submitting.join()
        t_submitted = time.perf_counter() - t0
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            with db.transaction() as s:
                left = s.scalar(
                    select(func.count())
                    .select_from(Job)
                    .where(Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)))
                )
            if not left and time.perf_counter() - t0 >= args.min_seconds:
                break
            time.sleep(0.2)
        t_done = time.perf_counter() - t0
        stop_readers.set()
        reading.join(60)
        if args.history_readers:
            history.join(180)
        stop_worker.set()
        worker.join(60)
    finally:
        server.terminate()
        server.wait(30)

    r = json.loads((tmp / "r.json").read_text())
    h = (
        json.loads((tmp / "h.json").read_text())
        if args.history_readers
        else {"latencies": [], "sizes": [], "points": [], "errors": {}}
    )
    s_out = json.loads((tmp / "s.json").read_text())
    w = json.loads((tmp / "worker.json").read_text())
    with db.transaction() as s:
        ids = set(s_out["ids"])
        new_subs = s.execute(select(Submission.id).where(Submission.id.in_(ids))).scalars().all()
        jobs = s.execute(select(Job.id, Job.status, Job.attempts).where(Job.submission_id.in_(ids))).all()
        runs = Counter(
            (row.job_id, row.secret)
            for row in s.execute(select(Run.job_id, Run.secret).where(Run.submission_id.in_(ids)))
        )
    n = args.submissions
    checks = {
        "every submission accepted (202)": len(s_out["ids"]) == n and not s_out["errors"],
        "every submission stored once": len(new_subs) == n == len(ids),
        "one job per submission, every job succeeded": len(jobs) == n
        and all(j.status == JobStatus.SUCCEEDED.value for j in jobs),
        "every job claimed once": all(j.attempts == 1 for j in jobs),
        "exactly one stored run per job and kind": len(runs) == 2 * n and set(runs.values()) == {1},
        "run exactly once (launcher calls == runs)": w["calls"] == 2 * n,
        "no reader error": not r["errors"],
        "no history reader error": not h["errors"],
    }
    reads = r["latencies"]
    print(
        f"PostgreSQL, API: {args.api_workers} uvicorn workers; 1 kernelcup worker (fake launcher, "
        f"{args.delay * 1000:.0f} ms/run, {args.concurrency} at a time); this machine: {os.cpu_count()} cores"
    )
    print(
        f"rankings: {args.readers} readers (think {args.think:g} s) read {len(reads)} times in {t_done:.1f} s "
        f"({len(reads) / t_done:.0f}/s): {percentiles(reads)}"
    )
    print(
        f"submit: {args.submitters} clients (think {args.submit_think:g} s), {n} ranked submissions accepted in "
        f"{t_submitted:.1f} s "
        f"({n / t_submitted:.0f}/s): {percentiles(s_out['latencies'])}"
    )
    print(f"all {n} submissions run and ranked after {t_done:.1f} s ({w['calls']} launcher calls)")
    print(f"leaderboard page, first render per uvicorn worker: {', '.join(f'{ms:.0f} ms' for ms in first_renders)}")
    if args.history_readers:
        sizes, pts = h["sizes"] or [0], h["points"] or [0]
        print(
            f"history: {args.history_readers} readers back to back read {len(h['latencies'])} times: "
            f"{percentiles(h['latencies'])}; answer {max(sizes):,} bytes, {max(pts):,} points at most"
        )
    targets = {
        "rankings p99 <= 50 ms": p99(reads) <= 50.0,
        "submit accepted p99 <= 150 ms": p99(s_out["latencies"]) <= 150.0,
    }
    for name, ok in {**checks, **targets}.items():
        print(f"  {'ok ' if ok else 'FAIL'} {name}")
    for what, errs in (("reader", r["errors"]), ("submit", s_out["errors"])):
        if errs:
            print(f"{what} errors: {errs}")
    ok = all(checks.values()) and all(targets.values())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
