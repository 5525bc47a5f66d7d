"""The CLI's remote mode and ``kernelcup.client`` against a real ``kernelcup serve`` on a loopback port.

The server runs as a subprocess (``--no-worker``) on an embedded SQLite database; the queue is served by a worker
in this test process with the fake launcher (no harness run), which reads each file for the verdict and timing
it should report (``# median N`` / ``# wrong``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from helpers import Proxy, write_problem, write_problem_set
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.client import ApiError, AsyncClient, Client, SubmissionOut
from leaderboards.db import open_database
from leaderboards.results import Scope, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import RunRequest, RunResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result

pytestmark = pytest.mark.slow

SOLUTION = "def custom_kernel(data):\n    return data\n"
REPO = Path(__file__).resolve().parents[2]


def respond(request: RunRequest) -> RunResult:
    text = request.submission.content.decode()
    if "# wrong" in text:
        return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, message="mismatch at [0]")
    match = re.search(r"# median (\d+)", text)
    block = re.search(r"BLOCK=(\d+)", text)  # the docs' example: a bigger block is "faster"
    median = float(match.group(1)) if match else 1e6 / int(block.group(1)) if block else 1000.0
    return accepted_result(request, median)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    env: dict[str, str]
    service: LeaderboardService
    token: str
    admin: str
    gate: threading.Event
    """Cleared: the test's worker stops claiming, and a job it holds does not finish."""

    def cli(self, *args: str, env: dict[str, str] | None = None) -> object:
        return CliRunner().invoke(build_app(), list(args), env={**self.env, **(env or {})})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("remote")
    write_problem(root / "problems", "add")
    write_problem(root / "problems", "multi")
    shutil.copytree(REPO / "problems" / "vectoradd", root / "problems" / "vectoradd")
    write_problem_set(
        root / "problems",
        [
            {"directory": "add", "deadline": "2099-01-01", "devices": ["cpu"]},
            {"directory": "multi", "deadline": "2099-01-01", "devices": ["cpu", "H100"]},
            {"directory": "vectoradd", "deadline": "2099-01-01", "devices": ["H100"]},
        ],
        name="starter",
    )
    env = {
        "KERNELCUP_DATA_DIR": str(root / "data"),
        "KERNELCUP_CONFIG_DIR": str(root / "config"),
        "KERNELCUP_API_SSE_POLL_S": "0.05",
        "KERNELCUP_API_SSE_KEEPALIVE_S": "0.5",
        "KERNELCUP_API_RANKINGS_CACHE_S": "0",
        # each test here submits the same solution again: every one is a run of its own, within no hourly limit
        "KERNELCUP_DUPLICATE_WINDOW_S": "0",
        "KERNELCUP_RATE_LIMIT_PER_HOUR": "none",
        "KERNELCUP_RANKED_RATE_LIMIT_PER_HOUR": "none",
        "KERNELCUP_PROGRAM_MAX_PENDING_JOBS": "2",
        "KERNELCUP_API_PROBLEMS_DIR": str(root / "problems"),
    }
    settings = CoreSettings(
        _env_file=None,
        data_dir=root / "data",
        duplicate_window_s=0,
        rate_limit_per_hour=None,
        ranked_rate_limit_per_hour=None,
    )
    service = LeaderboardService(open_database(settings), settings)
    from leaderboards.sync import sync_problem_set

    sync_problem_set(service, root / "problems" / "starter.yaml")
    token = service.create_token(UserRef("ann")).token
    admin = service.create_token(UserRef("root"), scopes=[Scope.ADMIN]).token
    port = free_port()
    proc_env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "KERNELCUP_"))}
    proc_env.update(env, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelcup.cli", "serve", "--port", str(port), "--no-worker"],
        cwd=root,
        env=proc_env,
        stdout=(root / "serve.log").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("kernelcup serve did not start")
    stop, gate = threading.Event(), threading.Event()
    gate.set()

    class Gated(FakeLauncher):
        async def run(self, request, job):  # type: ignore[no-untyped-def]
            await asyncio.to_thread(gate.wait)  # a claimed job waits too: nothing finishes while the gate is shut
            return await super().run(request, job)

    launcher = Gated(respond, delay_s=0.2)

    def serve_queue() -> None:
        ws = WorkerSettings(_env_file=None, poll_s=0.05, heartbeat_s=1.0, lease_s=30.0)

        async def main() -> None:
            while not stop.is_set():
                if gate.is_set():
                    await Worker(service, lambda _d: launcher, ws).run(once=True)
                await asyncio.sleep(0.05)

        asyncio.run(main())

    thread = threading.Thread(target=serve_queue, daemon=True)
    thread.start()
    yield Server(url, {**env, "KERNELCUP_SERVER": ""}, service, token, admin, gate)
    stop.set()
    thread.join(10)
    proc.terminate()
    proc.wait(timeout=20)
    out = (root / "serve.log").read_text()
    assert proc.returncode == 0, out
    assert "Traceback" not in out and token not in out and admin not in out


def test_login_list_submit_and_logout(server: Server, tmp_path: Path) -> None:
    r = server.cli("login", "--server", server.url, "--token", "kc_wrong")
    assert r.exit_code == 1 and "not valid" in r.output and "kernelcup login" in r.output
    assert "kernelcup tokens create" in r.output  # the way to a token on a deployment without the bot
    # a newcomer's walk: `--server 127.0.0.1:PORT` meant https, and a local server's answer was an SSL error
    r = server.cli("login", "--server", server.url.replace("http://", "https://"), "--token", server.token)
    assert r.exit_code == 1 and f"It answered without TLS: if it serves plain HTTP, use {server.url}" in r.output
    r = server.cli("login", "--server", server.url.removeprefix("http://"), env={"KERNELCUP_TOKEN": server.token})
    assert r.exit_code == 0, r.output
    assert f"logged in to {server.url} as ann" in r.output  # this machine: http
    config = Path(server.env["KERNELCUP_CONFIG_DIR"]) / "client.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600 and json.loads(config.read_text())["token"] == server.token
    r = server.cli("leaderboard", "list")
    assert r.exit_code == 0 and "multi" in r.output and "cpu, H100" in r.output
    # KERNELCUP_DATA_DIR is set here: the answer says it came from the stored login, and how to reach the local one
    assert f"note: answering from {server.url}" in r.output and "--server local" in r.output
    r = server.cli("leaderboard", "list", "--server", "local")  # (the local database is the server's own folder here)
    assert r.exit_code == 0 and "multi" in r.output and "note:" not in r.output
    kernel = tmp_path / "k.py"
    kernel.write_text("#!kernelcup leaderboard add\n#!kernelcup mode ranked\n# median 700\n" + SOLUTION)
    r = server.cli("submit", str(kernel))
    assert r.exit_code == 0, r.output
    assert "· testing" in r.output and "· done" in r.output  # live progress from the event stream
    assert "cpu: accepted, score 700 ns, secret-seed run passed, rank 1" in r.output
    r = server.cli("leaderboard", "show", "add", "--json")
    ranking = json.loads(r.stdout)["rankings"][0]
    assert ranking["entries"][0]["user_name"] == "ann" and ranking["total"] == 1
    r = server.cli("submit", str(kernel), "--user", "bob")
    assert r.exit_code == 2 and "token" in r.output
    r = server.cli("logout")
    assert r.exit_code == 0 and not config.exists()


def test_no_wait_then_follow_list_code_and_cancel(server: Server, tmp_path: Path) -> None:
    env = {"KERNELCUP_SERVER": server.url, "KERNELCUP_TOKEN": server.token}
    kernel = tmp_path / "k.py"
    kernel.write_text("# median 300\n" + SOLUTION)
    server.gate.clear()
    r = server.cli("submit", str(kernel), "-l", "multi", "-d", "all", "-m", "benchmark", "--no-wait", env=env)
    assert r.exit_code == 0, r.output
    sid = int(re.search(r"queued submission #(\d+): cpu \(position \d+\), H100", r.output).group(1))  # type: ignore[union-attr]
    r = server.cli("submissions", "list", "--json", env=env)
    assert [j["finished"] for j in json.loads(r.stdout)[0]["jobs"]] == [False, False]
    server.gate.set()
    r = server.cli("submissions", "show", str(sid), "--follow", env=env)
    assert r.exit_code == 0, r.output
    assert "[cpu] testing" in r.output and "H100: accepted, score 300 ns" in r.output
    r = server.cli("submissions", "code", str(sid), env=env)
    assert r.stdout == "# median 300\n" + SOLUTION
    server.gate.clear()
    queued = server.cli("submit", str(kernel), "-l", "add", "--no-wait", "--json", env=env)
    qid = json.loads(queued.stdout)["submission_id"]
    r = server.cli("submissions", "cancel", str(qid), env=env)
    assert r.exit_code == 0 and r.output.strip() == f"submission #{qid} cancelled"
    server.gate.set()
    # A finished submission is not deleted by a cancel (the newcomer's lost ranking): it says so and how to delete.
    r = server.cli("submissions", "cancel", str(sid), env=env)
    assert r.exit_code == 1 and "has already finished; there is nothing to cancel" in r.output
    assert "H100: accepted" in server.cli("submissions", "show", str(sid), env=env).output
    r = server.cli("submissions", "delete", str(sid), env=env)  # no terminal to ask: refused, and it says how
    assert r.exit_code == 1 and f"about to delete (take off the rankings): #{sid}" in r.output
    assert "H100: accepted" in r.output and "add --force to delete without asking" in r.output
    r = server.cli("submissions", "delete", str(sid), "--force", env=env)
    assert r.exit_code == 0 and r.output.strip() == f"submission #{sid} deleted: it is off the rankings"
    assert server.cli("submissions", "show", str(sid), env=env).exit_code == 1
    r = server.cli("submissions", "show", "99999", env=env)
    assert r.exit_code == 1 and "There is no submission #99999" in r.output


def test_client_batch_and_async(server: Server) -> None:
    program = server.service.create_token(UserRef("generator"), program=True).token
    candidates = [(f"c{i}.py", f"# median {900 - 100 * i}\n{SOLUTION}".encode()) for i in range(4)]
    candidates.insert(2, ("bad.py", b"# wrong\n" + SOLUTION.encode()))
    candidates.append(("empty.py", b""))
    with Client(server.url, program) as kc:
        results = kc.submit_many(candidates, leaderboard="add", mode="benchmark", timeout=120)
    assert len(results) == 6  # five ran (the pending-job quota of 2 was waited out), one was refused
    assert isinstance(results[-1], ApiError) and results[-1].code == "empty_file"
    ran = [r for r in results if isinstance(r, SubmissionOut)]
    assert [r.status.file_name for r in ran] == ["c0.py", "c1.py", "bad.py", "c2.py", "c3.py"]
    assert [r.accepted for r in ran] == [True, True, False, True, True]
    best = min((r for r in ran if r.accepted), key=lambda r: r.status.jobs[0].score_ns or float("inf"))
    assert best.status.file_name == "c3.py"

    async def run() -> None:
        async with AsyncClient(server.url, server.token) as kc:
            sub = await kc.submit(("a.py", f"# median 200\n{SOLUTION}".encode()), "add", ["cpu"], "ranked")
            async with asyncio.timeout(60):
                done = await sub.wait()
            assert done.accepted and done.status.jobs[0].rank == 1
            ranking = await kc.rankings("add", programs=False)
            assert all(not e.is_program for e in ranking.entries)
            with pytest.raises(ApiError) as exc:
                await kc.submit(("a.py", SOLUTION.encode()), "nope")
            assert exc.value.status == 404 and exc.value.code == "leaderboard_not_found"

    asyncio.run(run())


def test_compare_through_the_client_and_the_cli(server: Server, tmp_path: Path) -> None:
    """Issue 16: a compare as a mode of the API, the Python client (sync and async) and `kernelcup submit A B
    --compare`: the ratio with its interval per case and overall, "round k of N" progress, never ranked."""
    fast, slow = ("fast.py", f"# median 500\n{SOLUTION}".encode()), ("slow.py", f"# median 1000\n{SOLUTION}".encode())
    with Client(server.url, server.token) as kc:
        sub = kc.compare(fast, slow, "add", "cpu", rounds=2)
        assert sub.receipt is not None and sub.receipt.mode == "compare"
        rounds = [e.detail for e in sub.events(60) if e.phase == "round"]
        assert rounds == ["round 1 of 2 (fast.py first)", "round 2 of 2 (slow.py first)"]
        done = sub.result()
        comparison = done.status.comparison
        assert comparison is not None and comparison.result is not None and done.accepted
        assert comparison.result.ratio == pytest.approx(0.5) and comparison.result.cases
        assert (sub.code("b").file_name, sub.code("b").code.encode()) == slow  # the second file comes back too
        assert sub.code().file_name == "fast.py"
        compare_id = sub.id
        with pytest.raises(ApiError) as exc:
            kc.compare(fast, slow, "add", "cpu", rounds=3)
        assert exc.value.status == 422 and exc.value.code == "bad_rounds" and exc.value.field == "rounds"

    async def run() -> None:
        async with AsyncClient(server.url, server.token) as kc:
            sub = await kc.compare(fast, fast, "add", rounds=2)  # a file with itself: it runs
            async with asyncio.timeout(60):
                out = await sub.wait()
            assert out.status.comparison is not None and out.status.comparison.result is not None
            assert out.status.comparison.result.ratio == pytest.approx(1.0)

    asyncio.run(run())
    env = {"KERNELCUP_SERVER": server.url, "KERNELCUP_TOKEN": server.token}
    a, b = tmp_path / "fast.py", tmp_path / "slow.py"
    a.write_bytes(fast[1])
    b.write_bytes(slow[1])
    r = server.cli("submit", str(a), str(b), "--compare", "--rounds", "2", "-l", "add", env=env)
    assert r.exit_code == 0, r.output
    assert "round 1 of 2 (fast.py first)" in r.output and "fast.py vs slow.py · compare" in r.output
    assert "0.5000" in r.output and "fast.py is faster by 50.0%" in r.output
    r = server.cli("submit", str(a), str(b), "--compare", "--rounds", "2", "-l", "add", "--json", env=env)
    assert r.exit_code == 0 and json.loads(r.stdout)["status"]["comparison"]["result"]["ratio"] == pytest.approx(0.5)
    r = server.cli("submissions", "code", str(compare_id), "--b", env=env)
    assert r.exit_code == 0 and r.stdout == slow[1].decode()
    r = server.cli("submit", str(a), str(b), "-l", "add", env=env)
    assert r.exit_code == 2 and "--compare" in r.output
    r = server.cli("submit", str(a), "--compare", "-l", "add", env=env)
    assert r.exit_code == 2 and "two files" in r.output
    assert server.service.ranking("add", "cpu").entries == () or all(
        e.file_name not in ("fast.py", "slow.py") for e in server.service.ranking("add", "cpu").entries
    )


def streams_open(server: Server) -> float:
    text = httpx.get(f"{server.url}/metrics").text
    return float(re.search(r"^kernelcup_api_event_streams (\S+)$", text, re.M).group(1))  # type: ignore[union-attr]


def test_event_stream_reconnects_and_a_gone_client_leaves_nothing_running(server: Server) -> None:
    server.gate.clear()
    proxy = Proxy(int(server.url.rsplit(":", 1)[1]))
    try:
        with Client(f"http://127.0.0.1:{proxy.port}", server.token) as kc:
            sub = kc.submit(("k.py", SOLUTION.encode()), "add", mode="test")
            events = sub.events(timeout=60)
            first = next(events)
            assert first.phase == "queued" and first.event_id is not None
            time.sleep(0.3)
            assert streams_open(server) == 1.0
            proxy.cut()  # the connection drops mid-stream
            server.gate.set()
            rest = [e.phase for e in events]
            assert rest[-3:] == ["started", "testing", "done"]  # resumed after the last event seen: none repeated
            assert rest.count("started") == 1
            assert kc.submission(sub.id).result().accepted
    finally:
        proxy.stop()
    for _ in range(50):
        if streams_open(server) == 0.0:
            break
        time.sleep(0.1)
    assert streams_open(server) == 0.0

    server.gate.clear()
    with Client(server.url, server.token) as kc:
        sid = kc.submit(("k.py", SOLUTION.encode()), "add", mode="test").id
    with httpx.stream(
        "GET", f"{server.url}/api/v1/submissions/{sid}/events", headers={"Authorization": f"Bearer {server.token}"}
    ) as r:
        lines = r.iter_lines()  # kept: a dropped line iterator closes the connection
        assert r.status_code == 200 and next(lines).startswith("retry:")
        assert streams_open(server) == 1.0
    for _ in range(50):  # the client went away while the submission waits: the server's stream ends too
        if streams_open(server) == 0.0:
            break
        time.sleep(0.1)
    assert streams_open(server) == 0.0
    server.gate.set()


def test_oversized_headers_and_uploads_are_refused_by_the_server(server: Server) -> None:
    try:
        r = httpx.get(f"{server.url}/api/v1/leaderboards", headers={"X-Big": "x" * 200_000})
        assert r.status_code in (400, 431) and "Traceback" not in r.text
    except httpx.TransportError:
        pass  # the server refused the header and closed the connection while it was still being sent
    big = b"#" * (3 * 1024 * 1024)
    try:
        r = httpx.post(
            f"{server.url}/api/v1/submissions",
            headers={"Authorization": f"Bearer {server.token}"},
            files={"file": ("big.py", big)},
            data={"leaderboard": "add"},
        )
        assert r.status_code == 413 and r.json()["error"]["code"] == "file_too_large"
    except httpx.TransportError:
        pass  # the server may close the connection while the client still sends: also a refusal
    assert httpx.get(f"{server.url}/healthz").status_code == 200  # and it is still serving


def test_the_docs_example_runs(server: Server, tmp_path: Path) -> None:
    doc = (REPO / "docs" / "api.md").read_text()
    example = doc.split("## The Python client", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(example.splitlines()) <= 32
    script = tmp_path / "example.py"
    script.write_text(example)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELCUP_")}
    env.update(KERNELCUP_SERVER=server.url, KERNELCUP_TOKEN=server.token, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"best: block4096\.py \(submission #\d+\) at 0\.24 µs\n", done.stdout), done.stdout


def test_serve_with_its_worker_is_ready_and_stops_gracefully(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "KERNELCUP_"))}
    env.update(KERNELCUP_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelcup.cli", "serve", "--port", str(port), "--launcher", "local"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        ready = None
        for _ in range(300):
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
                if ready.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        assert ready is not None and ready.json() == {
            "ready": True,
            "database": "ok",
            "schema": "ok",
            "devices_without_worker": [],
            "workers_per_device": {},
            "unhealthy_workers": 0,
        }
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        assert "kernelcup_workers_alive 1.0" in metrics  # the in-process worker registered
    finally:
        proc.terminate()
        out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out
    assert "stopping the in-process worker" in out and "Traceback" not in out


def test_submit_through_a_server_sends_force_and_names_the_earlier_submission(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newcomer's walk: through a server, `--force` was not sent and a file sent again a moment ago printed
    `queued submission #12: cpu (position None)`: nothing had run, and nothing said so."""
    from kernelcup.commands import submit

    forced: list[bool] = []

    def answer(request: httpx.Request) -> httpx.Response:
        force = b'name="force"\r\n\r\ntrue' in request.content
        forced.append(force)
        job = {"job_id": 13 if force else 12, "device": "cpu", "queue_position": 1 if force else None}
        return httpx.Response(
            202,
            json={
                "submission_id": job["job_id"],
                "leaderboard": "add",
                "user_name": "ann",
                "file_name": "k.py",
                "mode": "test",
                "created_at": "2026-01-01T00:00:00Z",
                "jobs": [job],
                "links": {"self": "s", "events": "e", "code": "c"},
                "duplicate": not force,
            },
        )

    monkeypatch.setattr(
        submit, "client_for", lambda login: Client(login.server, login.token, transport=httpx.MockTransport(answer))
    )
    (env / "k.py").write_text(SOLUTION)
    args = ["submit", "k.py", "-l", "add", "-d", "cpu", "--mode", "test", "--no-wait", "--server", "http://x"]
    again = CliRunner().invoke(build_app(), args, env={"KERNELCUP_TOKEN": "kc_t"})
    assert again.exit_code == 0, again.output
    assert again.output.strip() == "already ran as #12 (same file, a moment ago); --force runs it again"
    r = CliRunner().invoke(build_app(), [*args, "--force"], env={"KERNELCUP_TOKEN": "kc_t"})
    assert r.exit_code == 0 and r.output.strip() == "queued submission #13: cpu (position 1)", r.output
    assert forced == [False, True]


def test_a_server_without_a_scheme_is_https_but_this_machine_is_http() -> None:
    from kernelcup.remote import normalise

    assert normalise("kernelcup.example.org/") == "https://kernelcup.example.org"
    assert normalise("10.0.0.5:8000") == "https://10.0.0.5:8000"
    for local in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "127.0.0.2"):
        assert normalise(local) == f"http://{local}"
    assert normalise("https://127.0.0.1:8000") == "https://127.0.0.1:8000"  # a scheme given is kept
