"""Replays through the real runner (issue 33): the local launcher evaluates a submission, then its replay on the same
inputs (``leaderboards/replay.py``).

- On the CPU runner (every suite run): the replay's verdict is the original's. Test mode: the cheapest real
  evaluation (two of them, a few CPU-seconds); the interval check is tested on recorded runs in test_programs.py.
- On a GPU (``gpu``; the device name is ``KERNELCUP_TEST_DEVICE``, default H100): an admin replays a ranked vectoradd
  submission; same verdict, and every benchmark case's median within the original's 95% interval. It prints the
  figures.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import future, make_problem, migrated_sqlite_template, sqlite_database

from leaderboards.problems import load_problem
from leaderboards.replay import ReplayReport
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.local import LocalLauncher
from runners.settings import RunnerSettings

REPO = Path(__file__).resolve().parents[2]
KERNEL = b"def custom_kernel(data):\n    return data\n"
ANN, ROOT = UserRef("ann"), UserRef("root")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[LeaderboardService]:
    database = sqlite_database(migrated_sqlite_template(tmp_path), tmp_path / "kernelcup.sqlite3")
    settings = CoreSettings(_env_file=None, database_url=None, data_dir=tmp_path / "data", rate_limit_per_hour=None,
                            duplicate_window_s=0)  # fmt: skip
    yield LeaderboardService(database, settings)
    database.dispose()


def serve(service: LeaderboardService, tmp_path: Path) -> None:
    launcher = LocalLauncher(RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True))
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=300.0, backoff_base_s=0.0)
    asyncio.run(Worker(service, lambda _d: launcher, settings).run(once=True))


def replayed_run(
    service: LeaderboardService, tmp_path: Path, code: bytes, device: str, mode: str, who: UserRef, admin: bool
) -> ReplayReport:
    original = service.submit(ANN, "k.py", code, "board", [device], mode).submission_id
    serve(service, tmp_path)
    replay = service.replay(original, who, admin=admin).submission_id
    serve(service, tmp_path)
    report = service.replay_report(replay, who, admin=admin)
    assert report.done and report.replay_of == original
    return report


def test_a_replay_on_the_cpu_runner_gets_the_same_verdict(service: LeaderboardService, tmp_path: Path) -> None:
    service.create_leaderboard(make_problem(tmp_path / "problems"), name="board", deadline=future(), devices=["cpu"])
    report = replayed_run(service, tmp_path, KERNEL, "cpu", "test", ANN, admin=False)
    (device,) = report.devices
    assert device.same_verdict and device.replay_verdict == device.original_verdict == "accepted"
    assert device.cases == () and report.holds  # test mode times nothing


@pytest.mark.gpu
def test_a_replay_of_a_ranked_run_on_a_gpu_holds(service: LeaderboardService, tmp_path: Path) -> None:
    device_name = os.environ.get("KERNELCUP_TEST_DEVICE", "H100")
    problem = load_problem(REPO / "problems" / "vectoradd")
    service.create_leaderboard(problem, name="board", deadline=future(), devices=[device_name])
    code = (REPO / "problems" / "vectoradd" / "solutions" / "correct" / "pytorch.py").read_bytes()
    report = replayed_run(service, tmp_path, code, device_name, "ranked", ROOT, admin=True)
    (device,) = report.devices
    for case in device.cases:
        interval = f"[{case.original_low_ns:.0f}, {case.original_high_ns:.0f}]"
        print(f"case {case.index}: original {case.original_median_ns:.0f} ns {interval}, ", end="")
        print(f"replay {case.replay_median_ns:.0f} ns, within: {case.within}")
    assert device.same_verdict and device.replay_verdict == "accepted", device
    assert device.cases and all(c.within for c in device.cases)
    assert service.ranking("board", device_name).total == 1  # the replay ranks nowhere
