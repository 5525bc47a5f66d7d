"""`kernelcup runners check`: the routing table and bounded launcher checks, through the real CLI."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.commands.runners import margin_warning
from runners.contract import RunResult, TestResult, Verdict
from runners.launchers import registry
from runners.launchers.base import Launcher
from runners.launchers.fake import FakeLauncher
from runners.launchers.github import GithubLauncher
from runners.launchers.settings import GithubSettings
from runners.settings import RunnerSettings


def local(answer=None, *, allows_unsandboxed: bool = False, delay_s: float = 0.0) -> FakeLauncher:
    """The shipped fake as this machine's launcher: its check passes; it answers the no-op job with
    ``answer(request)`` as made (echoing the request or not)."""
    return FakeLauncher(
        answer,
        name="local",
        ready="local: test machine",
        echo=False,
        allows_unsandboxed=allows_unsandboxed,
        delay_s=delay_s,
        progress=(),
    )


def use_local(monkeypatch: pytest.MonkeyPatch, build: Callable[[RunnerSettings], Launcher]) -> None:
    """The registry's ``local`` row builds ``build(the runner's settings)`` instead of this machine's launcher."""
    rows = tuple(replace(k, build=lambda settings, target: build(settings)) if k.name == "local" else k
                 for k in registry.KINDS)  # fmt: skip
    monkeypatch.setattr(registry, "KINDS", rows)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .env
    use_local(monkeypatch, lambda settings: local())
    for name in ("KERNELCUP_ROUTES", "GITHUB_TOKEN", "GITHUB_REPO", "KERNELCUP_WORKER_LAUNCH_MARGIN_S"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def invoke(*args: str):
    return CliRunner().invoke(build_app(), ["runners", "check", *args])


def test_default_table_is_local_and_ok(env) -> None:
    result = invoke("--json", "--no-job")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [
        {"device": "*", "launcher": "local", "ok": True, "message": "local: test machine", "warning": "",
         "sandboxed": None}
    ]  # fmt: skip


def answered(request, *, sandboxed: bool = True, echo: bool = True, verdict: Verdict = Verdict.ACCEPTED):
    test = TestResult(index=0, case=request.tests[0], verdict=verdict)
    result = RunResult(verdict=verdict, mode=request.mode, message="", tests=[test])
    result.system.sandboxed = sandboxed
    result.system.sandbox_note = "" if sandboxed else "bubblewrap is not installed"
    if echo:
        result.request_sha256, result.nonce = request.digest(), request.nonce
    return result


@pytest.mark.parametrize(
    ("launcher", "ok", "sandboxed", "says"),
    [
        (local(answered), True, True, "no-op job accepted"),
        (local(lambda r: answered(r, sandboxed=False)), False, False, "without its sandbox"),
        (local(lambda r: answered(r, sandboxed=False), allows_unsandboxed=True), True, False, "NOT sandboxed"),
        (local(lambda r: answered(r, echo=False)), False, True, "does not answer this job's request"),
        (local(lambda r: answered(r, verdict=Verdict.RUNTIME_ERROR)), False, True, "ended runtime_error"),
    ],
    ids=["sandboxed", "unsandboxed", "unsandboxed-allowed", "unbound", "failed"],
)
def test_the_no_op_job_reports_whether_the_route_is_sandboxed_and_trusted(env, launcher, ok, sandboxed, says) -> None:
    """Issue 10: `runners check` runs a no-op job on each route and judges its result as the worker would."""
    use_local(env, lambda settings: launcher)
    result = invoke("--json", "--job-timeout", "5")
    assert result.exit_code == (0 if ok else 1), result.output
    (row,) = json.loads(result.output)
    assert (row["ok"], row["sandboxed"]) == (ok, sandboxed) and says in row["message"], row


def test_a_no_op_job_that_hangs_is_bounded(env) -> None:
    use_local(env, lambda settings: local(delay_s=3600))
    started = time.monotonic()
    result = invoke("--json", "--job-timeout", "1")
    assert time.monotonic() - started < 10 and result.exit_code == 1
    assert "did not finish within 1 s" in json.loads(result.output)[0]["message"]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_the_no_op_job_runs_sandboxed_through_the_real_local_runner(env) -> None:
    from runners.launchers.local import LocalLauncher

    use_local(env, LocalLauncher)
    result = invoke("--json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert row["ok"] and row["sandboxed"] is True and "no-op job accepted" in row["message"], row


def test_without_network_it_says_what_it_could_not_reach_and_does_not_hang(env) -> None:
    env.setenv("KERNELCUP_ROUTES", "NVIDIA=github:gpu-nvidia,cpu=local")
    env.setenv("GITHUB_TOKEN", "ghp_test")
    env.setenv("GITHUB_REPO", "kernelcup/runs")
    started = time.monotonic()
    result = invoke("--timeout", "5", "--no-job")
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
    assert margin_warning(local(), 1.0) == "", "a launcher without its own waits is never flagged"


def test_workers_lists_live_workers_and_fails_on_an_unhealthy_one(env, tmp_path) -> None:
    from leaderboards.db import open_database
    from leaderboards.queue import JobQueue
    from leaderboards.settings import CoreSettings

    env.setenv("KERNELCUP_DATA_DIR", str(tmp_path / "data"))
    env.delenv("DATABASE_URL", raising=False)
    env.delenv("KERNELCUP_DATABASE_URL", raising=False)
    db = open_database(CoreSettings(_env_file=None, data_dir=tmp_path / "data"))
    result = invoke("--workers", "--no-job")  # no worker at all: nothing serves the queue (a newcomer's walk)
    assert result.exit_code == 1 and "no worker heartbeated" in result.output
    queue = JobQueue(db)
    queue.register_worker("gpu-box:1", ["H100"])
    queue.register_worker("cpu-box:2", [])
    result = invoke("--workers", "--json", "--no-job")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["routes"][0]["ok"] and {w["worker"] for w in data["workers"]} == {"gpu-box:1", "cpu-box:2"}
    queue.set_worker_health("gpu-box:1", False, "the evaluation interpreter /opt/py is broken; check KERNELCUP_PYTHON")
    db.dispose()
    result = invoke("--workers", "--no-job")
    assert result.exit_code == 1
    assert "unhealthy" in result.output and "KERNELCUP_PYTHON" in result.output


def test_a_local_route_to_a_gpu_this_machine_lacks_fails_its_check(env) -> None:
    class GpuLessLocal(FakeLauncher):
        def cannot_serve(self, device: str) -> str | None:
            return None if device == "cpu" else f"this worker has no GPU; the job wants {device}"

    gpu_less = GpuLessLocal(name="local", ready="local: test machine", echo=False, allows_unsandboxed=False,
                            progress=())
    use_local(env, lambda settings: gpu_less)
    env.setenv("KERNELCUP_ROUTES", "H100=local,cpu=local")
    result = invoke("--json", "--no-job")
    rows = {row["device"]: row for row in json.loads(result.output)}
    assert result.exit_code == 1
    assert rows["H100"]["ok"] is False and "the job wants H100" in rows["H100"]["message"]
    assert rows["cpu"]["ok"] is True
