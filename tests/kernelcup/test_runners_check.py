"""`kernelcup runners check`: the routing table and bounded launcher checks, through the real CLI."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.commands.runners import margin_warning
from runners import routing
from runners.launchers.github import GithubLauncher
from runners.remote_settings import GithubSettings


class ReadyLocal:
    name = "local"

    async def run(self, request, job):  # pragma: no cover - never run here
        raise AssertionError

    async def check(self) -> str:
        return "local: test machine"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.setattr(routing, "_local", lambda route: ReadyLocal())
    for name in ("KERNELCUP_ROUTES", "GITHUB_TOKEN", "GITHUB_REPO", "KERNELCUP_WORKER_LAUNCH_MARGIN_S"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def invoke(*args: str):
    return CliRunner().invoke(build_app(), ["runners", "check", *args])


def test_default_table_is_local_and_ok(env) -> None:
    result = invoke("--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [
        {"device": "*", "launcher": "local", "ok": True, "message": "local: test machine", "warning": ""}
    ]


def test_without_network_it_says_what_it_could_not_reach_and_does_not_hang(env) -> None:
    env.setenv("KERNELCUP_ROUTES", "NVIDIA=github:gpu-nvidia,cpu=local")
    env.setenv("GITHUB_TOKEN", "ghp_test")
    env.setenv("GITHUB_REPO", "kernelcup/runs")
    started = time.monotonic()
    result = invoke("--timeout", "5")
    assert time.monotonic() - started < 15
    assert result.exit_code == 1
    assert "NVIDIA" in result.output and "github:gpu-nvidia" in result.output
    assert "could not reach GitHub" in result.output
    assert "local: test machine" in result.output


def test_missing_credentials_name_the_settings(env) -> None:
    env.setenv("KERNELCUP_ROUTES", "NVIDIA=github:gpu-nvidia")
    result = invoke("--json")
    assert result.exit_code == 1
    (row,) = json.loads(result.output)
    assert not row["ok"] and "GITHUB_TOKEN is not set" in row["message"]


def test_a_bad_routes_setting_is_one_clear_error(env) -> None:
    env.setenv("KERNELCUP_ROUTES", "H100=modal:H999")
    result = invoke()
    assert result.exit_code == 1
    assert "KERNELCUP_ROUTES" in result.output and "H999" in result.output


def test_worker_margin_shorter_than_a_remote_wait_is_flagged() -> None:
    launcher = GithubLauncher(GithubSettings(_env_file=None, queue_timeout_s=600, setup_margin_s=300), labels="x")
    warning = margin_warning(launcher, 120.0)
    assert "KERNELCUP_WORKER_LAUNCH_MARGIN_S" in warning and str(int(launcher.wait_margin_s)) in warning
    assert margin_warning(launcher, launcher.wait_margin_s) == ""
    assert margin_warning(ReadyLocal(), 1.0) == "", "a launcher without its own waits is never flagged"


def test_workers_lists_live_workers_and_fails_on_an_unhealthy_one(env, tmp_path) -> None:
    from leaderboards.db import open_database
    from leaderboards.queue import JobQueue
    from leaderboards.settings import CoreSettings

    env.setenv("KERNELCUP_DATA_DIR", str(tmp_path / "data"))
    env.delenv("DATABASE_URL", raising=False)
    env.delenv("KERNELCUP_DATABASE_URL", raising=False)
    db = open_database(CoreSettings(_env_file=None, data_dir=tmp_path / "data"))
    queue = JobQueue(db)
    queue.register_worker("gpu-box:1", ["H100"])
    queue.register_worker("cpu-box:2", [])
    result = invoke("--workers", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["routes"][0]["ok"] and {w["worker"] for w in data["workers"]} == {"gpu-box:1", "cpu-box:2"}
    queue.set_worker_health("gpu-box:1", False, "the evaluation interpreter /opt/py is broken; check KERNELCUP_PYTHON")
    db.dispose()
    result = invoke("--workers")
    assert result.exit_code == 1
    assert "unhealthy" in result.output and "KERNELCUP_PYTHON" in result.output
