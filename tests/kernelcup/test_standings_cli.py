"""`kernelcup leaderboard system-test` and `kernelcup leaderboard standings [--final]` (issue 29): an admin queues the
top entries' system tests, live standings show their held-out coverage, final standings leave out the entry that
failed one and never name a held-out case."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from helpers import future, write_problem
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import open_database
from leaderboards.holdout import SystemTestRunner
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult, TestResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result

HELD_OUT = [{"size": 7331, "seed": 50}, {"size": 7919, "seed": 51}]
FILES = {"fast": b"def custom_kernel(d):\n    return d  # fast\n", "fair": b"def custom_kernel(d):\n    return d\n"}


def respond(request: RunRequest) -> RunResult:
    fast = request.submission.content == FILES["fast"]
    if fast and request.tests == HELD_OUT:  # right on the ranked shapes, wrong on a held-out one
        tests = [
            TestResult(index=0, case=HELD_OUT[0], verdict=Verdict.WRONG_ANSWER, message="size 7331 differs"),
            TestResult(index=1, case=HELD_OUT[1], verdict=Verdict.ACCEPTED),
        ]
        return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, tests=tests)
    return accepted_result(request, 500.0 if fast else 1000.0)


def serve(service: LeaderboardService, launcher: FakeLauncher) -> None:
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    runner = SystemTestRunner(service, lambda _d: launcher, 10.0)
    asyncio.run(Worker(service, lambda _d: launcher, settings, system_tests=runner).run(once=True))


def run(*args: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_system_test_then_live_and_final_standings(env: Path) -> None:
    settings = CoreSettings(_env_file=None, data_dir=env / "data")
    service = LeaderboardService(open_database(settings), settings)
    path = write_problem(env / "problems")
    task = yaml.safe_load((path / "task.yml").read_text())
    task["holdout"] = HELD_OUT
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    service.create_leaderboard(load_problem(path), deadline=future(), devices=["cpu"])
    for user, code in FILES.items():
        service.submit(UserRef(user), "k.py", code, "add", ["cpu"], Mode.RANKED)
    launcher = FakeLauncher(respond)
    serve(service, launcher)

    queued = run("leaderboard", "system-test", "add", "--top", "5")
    assert queued.exit_code == 0, queued.output
    assert "add: queued 2 system tests (2 held-out cases each, top 5 per device)" in queued.output
    serve(service, launcher)
    live = run("leaderboard", "standings", "add")
    assert live.exit_code == 0, live.output
    assert "live standings" in live.output and "1 of 2 held-out cases" in live.output
    assert "2 of 2 held-out cases" in live.output

    early = run("leaderboard", "standings", "add", "--final")
    assert early.exit_code == 1 and "no final standings on cpu yet" in early.output
    assert "kernelcup worker --once" in early.output and "kernelcup leaderboard freeze add" in early.output
    not_yet = run("leaderboard", "freeze", "add")
    assert not_yet.exit_code == 1 and "add on cpu: not frozen:" in not_yet.output and "open until" in not_yet.output
    past = datetime.now(UTC) - timedelta(minutes=1)
    service.update_leaderboard("add", deadline=past, force=True, actor="test")
    # the system tests ran after the (moved) deadline, so they count: an admin can freeze at once
    frozen = run("leaderboard", "freeze", "add")
    assert frozen.exit_code == 0 and "add on cpu: froze 1 entries (1 left out)" in frozen.output, frozen.output
    again = run("leaderboard", "freeze", "add")
    assert again.exit_code == 1 and "frozen already" in again.output
    service.db.dispose()

    final = run("leaderboard", "standings", "add", "--final")
    assert final.exit_code == 0, final.output
    assert (
        "final standings" in final.output
        and "left out: fast" in final.output
        and "(1 of 2 held-out cases)" in (final.output)
    )
    as_json = json.loads(run("leaderboard", "standings", "add", "--final", "--json").output)
    (view,) = as_json
    assert [(r["rank"], r["user_name"], r["coverage"]) for r in view["rows"]] == [(1, "fair", "2 of 2 held-out cases")]
    for output in (queued.output, live.output, final.output, json.dumps(as_json)):
        assert "7331" not in output and "7919" not in output


def test_the_table_shows_a_timed_held_out_figure_beside_the_coverage() -> None:
    from rich.console import Console

    from kernelcup.commands.standings import standings_table
    from leaderboards.competition import StandingRow, StandingsView

    row = StandingRow(1, False, "ann", 7, "k.py", 900.0, None, None, "3 of 3 held-out cases", holdout_ns=12_300.0)
    console = Console(width=200, record=True)
    console.print(standings_table(StandingsView("add", "cpu", False, None, (row,))))
    assert "3 of 3 held-out cases, timed 12.3 µs" in console.export_text()


def test_retime_then_retiming_through_a_worker(env: Path) -> None:
    """`kernelcup leaderboard retime` queues interleaved rounds; a worker with nothing else to do runs them
    (``Worker(retimings=...)``); `kernelcup leaderboard retiming` shows the pooled result, one machine here."""
    from leaderboards.queue import JobQueue
    from leaderboards.retiming import RetimeRunner

    settings = CoreSettings(_env_file=None, data_dir=env / "data")
    service = LeaderboardService(open_database(settings), settings)
    service.create_leaderboard(load_problem(write_problem(env / "problems")), deadline=future(), devices=["cpu"])
    for user, code in FILES.items():
        service.submit(UserRef(user), "k.py", code, "add", ["cpu"], Mode.RANKED)
    launcher = FakeLauncher(respond)
    serve(service, launcher)
    JobQueue(service.db).register_worker("gpu-box", ["cpu"])
    queued = run("leaderboard", "retime", "add", "--rounds", "4")
    assert queued.exit_code == 0, queued.output
    assert "add on cpu: queued 4 rounds of 2 entries, spread over gpu-box" in queued.output
    early = run("leaderboard", "retiming", "add")
    assert early.exit_code == 0 and "fewer than two rounds have run" in early.output

    settings_w = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    worker = Worker(service, lambda _d: launcher, settings_w, worker_id="gpu-box",
                    retimings=RetimeRunner(service, lambda _d: launcher, 10.0))  # fmt: skip
    asyncio.run(worker.run(once=True))
    shown = run("leaderboard", "retiming", "add")
    assert shown.exit_code == 0, shown.output
    assert "re-timed, 4 of 4 rounds on 1 machine" in shown.output
    lines = [line for line in shown.output.splitlines() if "#" in line and "│" in line]
    assert "fast" in lines[0] and "500 ns" in lines[0] and "gpu-box" in lines[0]
    as_json = json.loads(run("leaderboard", "retiming", "add", "--json").stdout)
    assert [r["user_name"] for r in as_json["rows"]] == ["fast", "fair"] and as_json["machines"] == 1
    refused = run("leaderboard", "retime", "add", "--top", "1")
    assert refused.exit_code == 2  # below --top's minimum: nothing to compare
