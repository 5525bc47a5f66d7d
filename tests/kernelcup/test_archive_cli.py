"""`kernelcup archive` (issue 34): a practice board's licensed kernel is exported to Parquet with its manifest; an
author withdraws it (and only theirs) and the next export leaves it out; an author sets their default licence and
name; every command has help."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pyarrow.parquet as pq
from helpers import future, write_problem
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import open_database
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode
from runners.launchers.fake import FakeLauncher

CODE = b"#!kernelcup license: MIT\ndef custom_kernel(d):\n    return d\n"


def run(*args: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_export_policy_license_and_withdraw(env: Path) -> None:
    settings = CoreSettings(_env_file=None, data_dir=env / "data")
    service = LeaderboardService(open_database(settings), settings)
    service.create_leaderboard(load_problem(write_problem(env / "problems")), deadline=future(), devices=["cpu"])
    sid = service.submit(UserRef("ann"), "k.py", CODE, "add", ["cpu"], Mode.BENCHMARK).submission_id
    worker = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    asyncio.run(Worker(service, lambda _d: FakeLauncher(), worker).run(once=True))
    for command in ("export", "policy", "license", "withdraw", "account"):
        shown = run("archive", command, "--help")
        assert shown.exit_code == 0 and "Usage" in shown.output, command
    before = run("archive", "export", "--out", str(env / "before"))
    assert before.exit_code == 0 and "exported 0 entries" in before.output  # after the deadline, by default
    policy = run("archive", "policy", "add", "--at-once")
    assert policy.exit_code == 0 and "published as they run" in policy.output, policy.output
    done = run("archive", "export", "--out", str(env / "out"), "--json")
    assert done.exit_code == 0, done.output
    manifest = json.loads(done.output)
    assert (manifest["entries"], manifest["licences"]) == (1, {"MIT": 1})
    assert json.loads((env / "out" / "manifest.json").read_text()) == manifest
    assert pq.read_table(env / "out" / "entries.parquet").column("code").to_pylist() == [CODE.decode()]
    refused = run("archive", "withdraw", str(sid), "--user", "bob")
    assert refused.exit_code == 1 and f"no submission #{sid} of yours" in refused.output
    changed = run("archive", "license", str(sid), "cc0", "--user", "ann")
    assert changed.exit_code == 1 and "Withdraw it from the archive first" in changed.output
    assert run("archive", "withdraw", str(sid), "--user", "ann").exit_code == 0
    after = run("archive", "export", "--out", str(env / "out"))
    assert after.exit_code == 0 and "exported 0 entries" in after.output
    account = run("archive", "account", "--default-license", "cc0", "--name", "", "--user", "ann")
    assert account.exit_code == 0 and "default licence: CC0-1.0; named as: anonymous" in account.output
    shown = run("archive", "account", "--user", "ann")
    assert shown.exit_code == 0 and "default licence: CC0-1.0; named as: anonymous" in shown.output
    assert "a ranked entry's number and score are public on its board's rankings" in shown.output  # what it hides
    bad = run("archive", "account", "--default-license", "GPL", "--user", "ann")
    assert bad.exit_code == 1 and "Unknown license 'GPL'" in bad.output
