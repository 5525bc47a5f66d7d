"""Shared test helpers: databases on SQLite and PostgreSQL, problem folders, run results.

The fixtures that use them (``database``, ``service``, parametrised over SQLite and PostgreSQL) live in
``tests/leaderboards/conftest.py``. Other test folders import these helpers with ``from helpers import ...``
(pytest puts ``tests/`` on ``sys.path`` because of the root ``conftest.py``) and can reuse the fixtures by
declaring them in their own conftest the same way.

PostgreSQL: ``KERNELCUP_TEST_POSTGRES_URL`` (default the trust-auth server on 127.0.0.1:5432, database ``test``).
Each test session works in its own new schema (``kc_test_<pid>_<random>``), dropped at the end, so parallel
sessions and other helpers' tests never see each other's rows.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import socket
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml
from sqlalchemy import create_engine, text

from leaderboards.db import Database, make_engine, upgrade
from leaderboards.models import Base
from leaderboards.problems import Problem, load_problem
from runners.contract import BenchmarkResult, Mode, RunRequest, RunResult, TestResult, TimingStats, Verdict

POSTGRES_URL = os.environ.get("KERNELCUP_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")

REFERENCE = """\
def generate_input(size, seed):
    return list(range(size))

def ref_kernel(data):
    return data

def check_implementation(data, output):
    return output == data, ""
"""


@functools.cache
def postgres_reachable() -> str | None:
    """None when the test PostgreSQL answers, else why not (used as the skip reason)."""
    import psycopg2

    url = make_engine(POSTGRES_URL).url
    try:
        conn = psycopg2.connect(
            host=url.host, port=url.port or 5432, user=url.username, dbname=url.database, connect_timeout=3
        )
    except psycopg2.Error as exc:
        return f"PostgreSQL at {url.host}:{url.port} not reachable: {str(exc).strip()}"
    conn.close()
    return None


def schema_url(schema: str) -> str:
    """The test PostgreSQL URL with ``search_path`` set to ``schema`` (works for subprocesses via DATABASE_URL)."""
    sep = "&" if "?" in POSTGRES_URL else "?"
    return f"{POSTGRES_URL}{sep}options={quote(f'-csearch_path={schema}')}"


class PostgresSchema:
    """A fresh schema on the test server, migrated to head; ``truncate`` empties it between tests."""

    def __init__(self) -> None:
        self.name = f"kc_test_{os.getpid()}_{secrets.token_hex(4)}"
        self.url = schema_url(self.name)

    def create(self) -> None:
        admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{self.name}"'))
        admin.dispose()
        engine = make_engine(self.url)
        upgrade(engine)
        engine.dispose()

    def drop(self) -> None:
        admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE'))
        admin.dispose()

    def database(self) -> Database:
        return Database(make_engine(self.url))

    def truncate(self) -> None:
        """Empty the tables a test wrote to and restart the id sequences it used: what ``TRUNCATE <every table>
        RESTART IDENTITY CASCADE`` did, in milliseconds instead of 1.3-2 s a test (TRUNCATE makes new files for
        each table and index it empties, and CASCADE empties all 38; measured 2026-11-28). Tables are emptied
        dependents first (the reverse of the models' foreign-key order), so no foreign key is ever left dangling."""
        engine = make_engine(self.url)
        names = [t.name for t in Base.metadata.sorted_tables]
        probe = " UNION ALL ".join(f'SELECT {i} FROM (SELECT 1 FROM "{n}" LIMIT 1) AS t' for i, n in enumerate(names))
        used = "SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema() AND last_value IS NOT NULL"
        with engine.begin() as conn:
            written = {names[i] for i in conn.execute(text(probe)).scalars()}
            for name in reversed(names):
                if name in written:
                    conn.execute(text(f'DELETE FROM "{name}"'))
            for sequence in conn.execute(text(used)).scalars().all():
                conn.execute(text(f'ALTER SEQUENCE "{sequence}" RESTART'))
        engine.dispose()


def migrated_sqlite_template(directory: Path) -> Path:
    """A migrated SQLite file to copy for each test (migrating once per session, not once per test)."""
    path = directory / "template.sqlite3"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()  # closing the last connection checkpoints the WAL into the main file
    return path


def sqlite_database(template: Path, target: Path) -> Database:
    shutil.copyfile(template, target)
    return Database(make_engine(f"sqlite:///{target}"))


def write_problem(
    root: Path,
    name: str = "add",
    *,
    tests: Sequence[dict[str, Any]] = ({"size": 3, "seed": 1},),
    benchmarks: Sequence[dict[str, Any]] = ({"size": 100, "seed": 2}, {"size": 1000, "seed": 3}),
    reference: str = REFERENCE,
    ranking_by: str = "geom",
    description: str = "Add two vectors.",
    lang: str = "py",
    templates: dict[str, str] | None = None,
) -> Path:
    """Write a small valid problem folder and return its path."""
    path = root / name
    (path / "templates").mkdir(parents=True, exist_ok=True)
    templates = {"pytorch": "def custom_kernel(data):\n    return data\n"} if templates is None else templates
    task = {
        "description": description,
        "lang": lang,
        "tests": list(tests),
        "benchmarks": list(benchmarks),
        "ranking_by": ranking_by,
        "templates": {label: f"templates/{label}.py" for label in templates},
    }
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    (path / "reference.py").write_text(reference)
    for label, content in templates.items():
        (path / "templates" / f"{label}.py").write_text(content)
    return path


def check_reference_in_process(request: RunRequest, *, settings: object = None) -> RunResult:
    """A reference check with the signature of ``runners.entry.check_reference``, for the tests of the CLI and
    sync side: it runs the request's reference in this process (no sandbox, no torch), generate_input ->
    ref_kernel -> check_implementation on ``request.tests[0]``, then generate_input on each benchmark case, and
    returns ACCEPTED or an infrastructure error whose message names the step (and benchmark) that failed. The real
    one runs the same steps in the sandboxed evaluator."""
    case = request.tests[0]
    namespace: dict[str, Any] = {"__name__": "reference"}
    steps = (
        (
            "importing reference.py",
            lambda: exec(compile(request.files["reference.py"], "reference.py", "exec"), namespace),
        ),
        ("generate_input", lambda: namespace.__setitem__("data", namespace["generate_input"](**case))),
        ("ref_kernel", lambda: namespace.__setitem__("output", namespace["ref_kernel"](namespace["data"]))),
        (
            "check_implementation",
            lambda: namespace.__setitem__(
                "verdict", namespace["check_implementation"](namespace["data"], namespace["output"])
            ),
        ),
    )
    for step, run in steps:
        try:
            run()
        except Exception as exc:
            return RunResult.infrastructure_error(request.mode, f"{step} raised {type(exc).__name__}: {exc}")
    verdict = namespace["verdict"]
    if not (isinstance(verdict, tuple) and len(verdict) == 2 and verdict[0] is True):
        return RunResult.infrastructure_error(
            request.mode, f"check_implementation refused the reference's own output: {verdict!r}"
        )
    for i, bench in enumerate(request.benchmarks):
        try:
            namespace["generate_input"](**bench)
        except Exception as exc:
            return RunResult.infrastructure_error(
                request.mode, f"benchmark {i + 1}: generate_input raised {type(exc).__name__}: {exc}"
            )
    return RunResult(verdict=Verdict.ACCEPTED, mode=request.mode)


def make_problem(root: Path, name: str = "add", **kwargs: Any) -> Problem:
    return load_problem(write_problem(root, name, **kwargs))


def write_problem_set(root: Path, entries: Sequence[dict[str, Any]], name: str = "test-set") -> Path:
    file = root / f"{name}.yaml"
    file.write_text(yaml.safe_dump({"name": name, "problems": list(entries)}, sort_keys=False))
    return file


def future(days: float = 30) -> datetime:
    return datetime.now(UTC) + timedelta(days=days)


def timing(median_ns: float) -> TimingStats:
    return TimingStats(
        samples=10,
        median_ns=median_ns,
        mean_ns=median_ns,
        std_ns=median_ns * 0.01,
        stderr_ns=median_ns * 0.003,
        min_ns=median_ns * 0.98,
        max_ns=median_ns * 1.05,
    )


def run_result(
    medians_ns: Sequence[float] = (1000.0, 2000.0),
    verdict: Verdict = Verdict.ACCEPTED,
    mode: Mode = Mode.RANKED,
    message: str = "",
) -> RunResult:
    """A runner's result with one passed test and a benchmark per median (no timings unless accepted)."""
    passed = verdict is Verdict.ACCEPTED
    now = datetime.now(UTC)
    return RunResult(
        verdict=verdict,
        mode=mode,
        message=message,
        tests=[TestResult(index=0, case={"size": 3}, verdict=verdict)],
        benchmarks=[
            BenchmarkResult(index=i, case={"size": 100 * (i + 1)}, verdict=verdict, stats=timing(m) if passed else None)
            for i, m in enumerate(medians_ns)
        ]
        if mode is not Mode.TEST
        else [],
        started_at=now - timedelta(seconds=2),
        finished_at=now,
    )


NCU_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "ncu" / "raw_page_h100.csv"


def profile_result(report: bytes | None = b"NVRP fake report") -> RunResult:
    """A profile run under Nsight Compute: one passed test, the kernels of ``NCU_FIXTURE`` and ``report``."""
    from runners.ncu import parse_raw_csv

    result = run_result(mode=Mode.PROFILE, medians_ns=())
    return result.model_copy(
        update={
            "kernel_metrics": parse_raw_csv(NCU_FIXTURE.read_text()),
            "ncu_report": report,
            "profile": "Nsight Compute profiled 3 kernel launch(es) (report attached).",
        }
    )


def profiled(request: RunRequest, report: bytes | None = b"NVRP\x00 report bytes") -> RunResult:
    """A fake launcher's answer to ``request`` as a profile run under Nsight Compute: every test accepted, the
    kernels of ``NCU_FIXTURE`` and ``report``."""
    from runners.launchers.fake import accepted_result

    kept = profile_result(report)
    return accepted_result(request).model_copy(
        update={"kernel_metrics": kept.kernel_metrics, "ncu_report": kept.ncu_report, "profile": kept.profile}
    )


def bind(result: RunResult, request: RunRequest) -> RunResult:
    """``result`` as an honest runner returns it for ``request``: echoing the request's SHA-256 and nonce (the worker
    refuses results that do not; see ``RunResult.mismatch``)."""
    return result.model_copy(update={"request_sha256": request.digest(), "nonce": request.nonce})


class Proxy:
    """A loopback TCP proxy that a test can cut (drop every connection) or stop and start again on the same port:
    a network that drops, or a database server that goes away and comes back."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.sockets: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.start()

    def start(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
                upstream = socket.create_connection(self.target)
            except OSError:
                return
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        self.sockets.clear()

    def stop(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (close alone does not)
            self.listener.close()
            self.listener = None
        self.cut()


class OnlyWhatTheWorkerUses:
    """A service seen through ``leaderboards.worker.WorkerService``: anything else the worker asked for would be an
    AttributeError (build it from a ``LeaderboardService``)."""

    def __init__(self, service: Any) -> None:
        self.db = service.db
        self.clock = service.clock
        self.run_requests = service.run_requests
        self.record_run = service.record_run
        self.public_run_failed = service.public_run_failed
        self.record_comparison = service.record_comparison
