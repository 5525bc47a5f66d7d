"""The archive query and the similarity search on PostgreSQL with 100,000 published kernels (issue 34).

Target: <= 100 ms p99 for each of: a page of the archive (``LeaderboardService.archive``: filters, sort, offset),
the kernels near a published one (``similar_to_published``) and the kernels near a file (``similar_kernels``).

What it does, in a schema of its own (dropped at the end unless --keep):

1. migrates the schema; creates PROBLEMS boards (one problem each, two devices), all publishing at once;
2. generates KERNELS distinct Python kernels (statements drawn from a pool, names and constants random; a quarter
   are edited copies of an earlier one, renamed, some lines changed: the near copies the index must find), spread
   over the boards, and bulk-loads with COPY: users, code, submissions, their licences, one job and one public run
   each (with speedup and roofline share), the archive's kept row of each (``archive_entries``, the values
   ``refresh_archive_entries`` writes when a run is recorded), and each submission's similarity signature and
   MinHash bands, computed by ``leaderboards.similarity_index`` exactly as when a submission is stored;
3. times each query --repeat times (random problems, devices, pages and kernels) and prints p50 / p99 / max.

    .venv/bin/python benchmarks/archive_search.py                  # the issue's size against 127.0.0.1:5432/test
    .venv/bin/python benchmarks/archive_search.py --kernels 20000 --url postgresql+psycopg2://...
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import multiprocessing
import os
import random
import secrets
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import create_engine, select, text

from leaderboards.archive import ArchiveFilter, run_figures
from leaderboards.db import Database, make_engine, upgrade
from leaderboards.models import Leaderboard
from leaderboards.problems import Problem, Task
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.similarity import fingerprint
from leaderboards.similarity_index import buckets, pack

DEFAULT_URL = os.environ.get("KERNELCUP_BENCH_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")
LOADED = ("users", "submission_code", "submissions", "submission_licences", "jobs", "runs", "archive_entries",
          "similarity_signatures", "similarity_bands", "leaderboards", "archive_policies")  # fmt: skip
DEVICES = ("H100", "A100")
LICENCES = ("MIT", "CC-BY-4.0", "CC0-1.0", "Apache-2.0")
CALLS = [
    f"{m}.{f}"
    for m in ("tl", "torch", "triton", "F")
    for f in (
        "load",
        "store",
        "sum",
        "max",
        "exp",
        "dot",
        "where",
        "arange",
        "zeros",
        "cdiv",
        "atomic_add",
        "maximum",
        "sqrt",
        "matmul",
        "empty_like",
        "softmax",
        "reshape",
        "program_id",
        "multiple_of",
        "full",
    )
]
OPS = ("+", "-", "*", "//", "%", "<<", ">>", "&", "|", "<", ">")
METHODS = ("view", "reshape", "to", "contiguous", "t", "sum", "max", "flatten", "float", "half")
POOL = [
    "{a} = {f}({b} {o} {c}, {k})",
    "{a} = {f}({b}).{m}({k}) {o} {c}",
    "{a}[{b}] = {f}({c}, {d}) {o} {k}",
    "if {a} {o} {b}: {c} = {f}({d}, {k})",
    "{a} = {b}.{m}(-1)[{c} : {c} + {k}]",
    "{a} += {f}({b}, {c}) {o} {g}({d})",
    "{a}, {b} = {f}({c}), {g}({d}, {k})",
]
NAMES = [f"{p}{i}" for p in ("x", "acc", "ptr", "offs", "blk", "tmp", "row", "col") for i in range(4)]


def _problem(name: str) -> Problem:
    task = Task(description="bench", tests=[{"n": 1, "seed": 1}], benchmarks=[{"n": 1, "seed": 1}])
    return Problem(path=Path(name), task=task, files={"reference.py": "# bench"})


def _kernel(rng: random.Random, lines: int) -> list[str]:
    out = []
    for _ in range(lines):
        a, b, c, d = (rng.choice(NAMES) for _ in range(4))
        f, g, o, m = rng.choice(CALLS), rng.choice(CALLS), rng.choice(OPS), rng.choice(METHODS)
        out.append("    " + rng.choice(POOL).format(a=a, b=b, c=c, d=d, f=f, g=g, o=o, m=m, k=rng.randint(0, 4096)))
    return out


def kernels(n: int, seed: int) -> list[str]:
    """``n`` distinct kernels; about a quarter edited copies of an earlier one."""
    rng = random.Random(seed)
    bodies: list[list[str]] = []
    for _ in range(n):
        if bodies and rng.random() < 0.25:
            body = list(rng.choice(bodies[-2000:]))
            for _ in range(rng.choice([0, 1, 2, 3, 6])):
                body[rng.randrange(len(body))] = _kernel(rng, 1)[0]
            rename = dict(zip(NAMES, rng.sample(NAMES, len(NAMES)), strict=True))
            body = [" ".join(rename.get(w, w) for w in line.split(" ")) for line in body]
        else:
            body = _kernel(rng, rng.randint(10, 40))
        bodies.append(body)
    return [
        f"# kernel {i}\ndef custom_kernel(data):\n" + "\n".join(b) + "\n    return x0\n" for i, b in enumerate(bodies)
    ]


def _copy(dbapi, table: str, columns: str, buf: io.StringIO) -> None:  # type: ignore[no-untyped-def]
    buf.seek(0)
    with dbapi.cursor() as cur:
        cur.copy_expert(f"COPY {table} ({columns}) FROM STDIN WITH (FORMAT csv)", buf)


def _fingerprint(code: str) -> frozenset[bytes]:
    return fingerprint(code, "k.py")


def load(db: Database, boards: list[tuple[int, str]], codes: list[str], users: int, seed: int) -> float:
    """COPY every table's rows (signatures and bands computed here); seconds taken."""
    rng = random.Random(seed)
    t0 = time.perf_counter()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with multiprocessing.Pool() as pool:  # tokenising 100,000 files is the slow part: every core
        prints = pool.map(_fingerprint, codes, chunksize=500)
    bufs = {t: io.StringIO() for t in ("users", "code", "subs", "lic", "jobs", "runs", "entries", "sigs", "bands")}
    for u in range(1, users + 1):
        bufs["users"].write(f"{u},local:user{u},user{u},f\n")
    for i, code in enumerate(codes, start=1):
        lb_id, problem = boards[i % len(boards)]
        when = (start + timedelta(seconds=i * 11)).isoformat()
        device = DEVICES[(i // len(boards)) % 2]  # every problem on both devices
        data = code.encode()
        bufs["code"].write(f"{i},{hashlib.sha256(data).hexdigest()},\\x{data.hex()},{when}\n")
        user = rng.randint(1, users)
        bufs["subs"].write(f"{i},{user},{lb_id},{i},k.py,benchmark,{when},f\n")
        bufs["lic"].write(f"{i},{rng.choice(LICENCES)},{when}\n")
        bufs["jobs"].write(f"{i},{i},{device},succeeded,1,3,{when}\n")
        passed = rng.random() > 0.1
        speedup = rng.lognormvariate(0.3, 0.6)
        result = {"roofline_share": round(rng.random(), 3), "baselines": [{"label": "reference", "speedup": speedup}]}
        cell = '"' + json.dumps(result).replace('"', '""') + '"'
        score = f"{rng.uniform(1e4, 1e6):.1f}" if passed else ""
        verdict = "accepted" if passed else "wrong_answer"
        bufs["runs"].write(
            f"{i},{i},{i},{device},benchmark,f,{'t' if passed else 'f'},{verdict},{score},fp,{cell},{{}},{when}\n"
        )
        speedup_cell, roofline_cell = (f"{v}" if v is not None else "" for v in run_figures(result))
        bufs["entries"].write(  # what refresh_archive_entries writes when the run is recorded
            f"{i},{i},{device},{lb_id},{problem},{user},{when},{'t' if passed else 'f'},{score},"
            f"{speedup_cell},{roofline_cell}\n"
        )
        print_ = prints[i - 1]
        bufs["sigs"].write(f"{i},{problem},\\x{pack(print_).hex()}\n")
        for band, bucket in enumerate(buckets(print_)):
            bufs["bands"].write(f"{i},{band},{problem},{bucket}\n")
    prepared = time.perf_counter() - t0
    raw = db.engine.raw_connection()
    try:
        dbapi = raw.driver_connection
        assert dbapi is not None
        _copy(dbapi, "users", "id, identity, name, is_banned", bufs["users"])
        _copy(dbapi, "submission_code", "id, sha256, content, created_at", bufs["code"])
        _copy(dbapi, "submissions", "id, user_id, leaderboard_id, code_id, file_name, mode, created_at, deleted",
              bufs["subs"])  # fmt: skip
        _copy(dbapi, "submission_licences", "submission_id, licence, updated_at", bufs["lic"])
        _copy(dbapi, "jobs", "id, submission_id, device, status, attempts, max_attempts, created_at", bufs["jobs"])
        _copy(dbapi, "runs", "id, job_id, submission_id, device, mode, secret, passed, verdict, score, fingerprint, "
              "result, system, created_at", bufs["runs"])  # fmt: skip
        _copy(dbapi, "archive_entries", "run_id, submission_id, device, leaderboard_id, problem, user_id, "
              "submitted_at, passed, score, speedup, roofline_share", bufs["entries"])  # fmt: skip
        _copy(dbapi, "similarity_signatures", "submission_id, problem, shingles", bufs["sigs"])
        _copy(dbapi, "similarity_bands", "submission_id, band, problem, bucket", bufs["bands"])
        with dbapi.cursor() as cur:
            for table in ("users", "submission_code", "submissions", "jobs", "runs"):
                cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        dbapi.commit()
    finally:
        raw.close()
    print(f"signatures computed in {prepared:.1f} s")
    return time.perf_counter() - t0


def timed(fn: Callable[[int], object], repeat: int) -> list[float]:
    out = []
    for i in range(repeat):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def summary(ms: list[float]) -> tuple[str, float]:
    ms = sorted(ms)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms (n={len(ms)})", p99


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=DEFAULT_URL, help="PostgreSQL URL (a schema of its own is created in it)")
    ap.add_argument("--kernels", type=int, default=100_000)
    ap.add_argument("--problems", type=int, default=10)
    ap.add_argument("--users", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--target-ms", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the schema afterwards (its name is printed)")
    ap.add_argument(
        "--schema",
        help="time the queries again on a schema an earlier --keep run loaded (same --kernels, --problems and --seed): "
        "it is migrated to head (new tables filled by their migrations), not loaded, and kept",
    )
    args = ap.parse_args()

    reuse = args.schema is not None
    schema = args.schema or f"kc_bench_{os.getpid()}_{secrets.token_hex(3)}"
    admin = create_engine(args.url, isolation_level="AUTOCOMMIT")
    if not reuse:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    print(f"schema {schema}")
    sep = "&" if "?" in args.url else "?"
    db = Database(make_engine(f"{args.url}{sep}options={quote(f'-csearch_path={schema}')}"))
    try:
        upgrade(db.engine)
        service = LeaderboardService(db, CoreSettings(_env_file=None))
        for k in range(0 if reuse else args.problems):
            service.create_leaderboard(
                _problem(f"problem{k}"), name=f"board{k}", deadline=datetime.now(UTC) + timedelta(days=30),
                devices=list(DEVICES),
            )  # fmt: skip
            service.set_archive_policy(f"board{k}", at_once=True, actor="bench")
        with db.transaction() as s:
            boards = [(lb.id, lb.problem) for lb in s.scalars(select(Leaderboard).order_by(Leaderboard.id))]
        codes = kernels(args.kernels, args.seed)
        if not reuse:
            seconds = load(db, boards, codes, args.users, args.seed)
            print(f"loaded {args.kernels:,} kernels in {seconds:.1f} s")
        # What autovacuum does to a live table: statistics, and the visibility map COPY leaves empty (without it the
        # near-copy check's index-only scans of similarity_bands read the heap too: 90 instead of 40 ms a page).
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for table in LOADED:  # this schema's tables only (search_path), never the whole database
                conn.exec_driver_sql(f"VACUUM ANALYZE {table}")
        page = service.archive(ArchiveFilter())
        print(f"published entries: {page.total:,}{'' if page.total_exact else '+'}")

        rng = random.Random(args.seed + 1)
        with db.engine.connect() as conn:  # the (problem, device) pairs that have entries: no empty page is timed
            pairs = sorted(
                (r.problem, r.device)
                for r in conn.execute(text("SELECT DISTINCT problem, device FROM archive_entries"))
            )
        pick = [(*rng.choice(pairs), rng.randrange(0, 200)) for _ in range(args.repeat)]
        ids = [rng.randint(1, args.kernels) for _ in range(args.repeat)]
        queries = []
        for i in ids:  # a file near a stored one: renamed and one line changed
            lines = codes[i - 1].replace("x0", "zz").splitlines()
            lines[3] = "    q = tl.load(q + 1)"
            queries.append((boards[i % len(boards)][1], "\n".join(lines)))
        service.archive(ArchiveFilter())  # warm the pool
        figures = {
            "archive (problem + device + accepted, newest first, 20 a page)": timed(
                lambda i: service.archive(
                    ArchiveFilter(problem=pick[i][0], device=pick[i][1], accepted=True), offset=pick[i][2]
                ),
                args.repeat,
            ),
            "archive (problem, fastest first, 20 a page)": timed(
                lambda i: service.archive(ArchiveFilter(problem=pick[i][0], sort="speed"), offset=pick[i][2]),
                args.repeat,
            ),
            "archive (no filter, newest first, 20 a page)": timed(lambda i: service.archive(ArchiveFilter()), 50),
            "similar to a published kernel (by id, 10)": timed(
                lambda i: service.similar_to_published(ids[i]), args.repeat
            ),
            "similar to a file (by code, 10)": timed(
                lambda i: service.similar_kernels(queries[i][0], queries[i][1], "q.py"), args.repeat
            ),
        }
        found = service.similar_kernels(queries[0][0], queries[0][1], "q.py")
        print(f"e.g. a query near #{ids[0]}: found {[(k.submission_id, k.similarity) for k in found[:3]]}")
        met = True
        for name, ms in figures.items():
            line, p99 = summary(ms)
            met = met and p99 <= args.target_ms
            print(f"{name}: {line}")
        print(f"target {args.target_ms:.0f} ms p99: {'met' if met else 'MISSED'}")
        return 0 if met else 1
    finally:
        db.dispose()
        if not (args.keep or reuse):
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


if __name__ == "__main__":
    raise SystemExit(main())
