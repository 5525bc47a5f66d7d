"""A kernelcup served in-process for the tests of the programs' surfaces (MCP server, agent guide, RL environment):
the API's ASGI app under uvicorn on a loopback port (in a thread), a ``kernelcup.client.Client`` of it, and a worker
thread with the fake launcher serving the queue. The launcher reads each file for the outcome it should report
(``respond``). (Not FastAPI's TestClient: with httpx2 installed, as the mcp SDK's dependency, it is an httpx2 client,
whose transport kernelcup's httpx client cannot use.)
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from helpers import future, make_problem, migrated_sqlite_template, sqlite_database

from kernelcup.client import Client
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import BaselineResult, Mode, RunRequest, RunResult, TestResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result
from web.app import create_app
from web.settings import WebSettings

TESTS = [{"size": n, "seed": n} for n in (1, 2, 3, 4)]
TEMPLATE = "# starter: make it fast\ndef custom_kernel(data):\n    return data\n"
REFERENCE_NS = 2000.0
"""The reference's median the fake runner reports: a file's speedup is this over its own median."""


def respond(request: RunRequest) -> RunResult:
    """``# median N``: accepted at N ns (speedup REFERENCE_NS / N in timed modes); ``# wrong K``: the first K tests
    fail; ``# compile error``: a compile error."""
    text = request.submission.content.decode()
    if "# compile error" in text:
        return RunResult(verdict=Verdict.COMPILE_ERROR, mode=request.mode, message="it does not compile",
                         compile_output="error: expected ';'")  # fmt: skip
    wrong = re.search(r"# wrong (\d+)", text)
    if wrong:
        k = int(wrong.group(1))
        outcomes = [(Verdict.WRONG_ANSWER, "3 of 9 elements differ"), (Verdict.ACCEPTED, "")]
        tests = [
            TestResult(index=i, case=c, verdict=outcomes[i >= k][0], message=outcomes[i >= k][1])
            for i, c in enumerate(request.tests)
        ]
        return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, message="mismatch", tests=tests)
    median = float(re.search(r"# median (\d+)", text).group(1)) if "# median" in text else 1000.0  # type: ignore[union-attr]
    result = accepted_result(request, median)
    if request.mode in (Mode.BENCHMARK, Mode.RANKED):
        speedup = REFERENCE_NS / median
        baseline = BaselineResult(label="reference", function="ref_kernel", case_medians_ns=[REFERENCE_NS],
                                  speedups=[speedup], speedup=speedup)  # fmt: skip
        result = result.model_copy(update={"baselines": [baseline]})
    return result


@dataclass
class Served:
    service: LeaderboardService
    client: Client
    token: str
    launcher: FakeLauncher
    url: str


@contextmanager
def served_kernelcup(root: Path) -> Iterator[Served]:
    """One leaderboard, ``add`` (devices cpu and H100, four tests, a pytorch template), and a token for ``agent``."""
    database = sqlite_database(migrated_sqlite_template(root), root / "kernelcup.sqlite3")
    settings = CoreSettings(_env_file=None, database_url=None, data_dir=root / "data", rate_limit_per_hour=None,
                            duplicate_window_s=0)  # fmt: skip
    service = LeaderboardService(database, settings)
    problem = make_problem(root / "problems", tests=TESTS, templates={"pytorch": TEMPLATE},
                           description="Add two vectors: return a + b.")  # fmt: skip
    service.create_leaderboard(problem, deadline=future(), devices=["cpu", "H100"])
    token = service.create_token(UserRef("agent"), program=True).token
    web = WebSettings(_env_file=None, problems_dir=root / "problems", sse_poll_s=0.02, rankings_cache_s=0)
    launcher = FakeLauncher(respond)
    stop = threading.Event()

    def serve_queue() -> None:
        ws = WorkerSettings(_env_file=None, poll_s=0.02, heartbeat_s=1.0, lease_s=30.0, backoff_base_s=0.0)

        async def main() -> None:
            while not stop.is_set():
                await Worker(service, lambda _d: launcher, ws).run(once=True)
                await asyncio.sleep(0.02)

        asyncio.run(main())

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    http = uvicorn.Server(uvicorn.Config(create_app(service, web), host="127.0.0.1", port=port, log_level="warning"))
    threads = [threading.Thread(target=serve_queue, daemon=True), threading.Thread(target=http.run, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(600):
            if http.started:
                break
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        with Client(url, token) as client:
            yield Served(service, client, token, launcher, url)
    finally:
        stop.set()
        http.should_exit = True
        for thread in threads:
            thread.join(20)
    database.dispose()
