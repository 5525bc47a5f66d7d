"""A machine refuses at once the device it does not have: `run --device cuda` on a CPU box, and `worker` (or the
bot's and the API's in-process worker) asked to serve a GPU it lacks; a submission for it fails at once, no retry."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers import write_problem, write_problem_set
from typer.testing import CliRunner

import runners.sysinfo
from kernelcup.cli import build_app

SOLUTION = "def custom_kernel(data):\n    return data\n"


@pytest.fixture
def cpu_box(env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine without a GPU, where this repository's own test code may run unsandboxed."""
    monkeypatch.setenv("KERNELCUP_ALLOW_UNSANDBOXED", "true")
    monkeypatch.setattr(runners.sysinfo, "gpu_query", lambda: None)
    return env


def test_run_with_device_cuda_on_a_cpu_box_says_so_at_once(cpu_box: Path) -> None:
    write_problem(cpu_box / "problems", "add")
    (cpu_box / "k.py").write_text(SOLUTION)
    started = time.monotonic()
    result = CliRunner().invoke(build_app(), ["run", str(cpu_box / "problems" / "add"), "k.py", "--device", "cuda"])
    assert result.exit_code == 1
    assert "this machine has no GPU" in result.output and "--device cpu" in result.output
    assert time.monotonic() - started < 5


def test_worker_refuses_to_serve_a_gpu_it_does_not_have(cpu_box: Path) -> None:
    result = CliRunner().invoke(build_app(), ["worker", "--device", "H100", "--once"])
    assert result.exit_code == 1
    assert "cannot serve --device H100: this worker has no GPU; the job wants H100" in result.output
    assert "Traceback" not in result.output
    ok = CliRunner().invoke(build_app(), ["worker", "--device", "cpu", "--once"])
    assert ok.exit_code == 0, ok.output


def test_submit_for_a_missing_gpu_fails_at_once_as_configuration(cpu_box: Path) -> None:
    write_problem(cpu_box / "problems", "add")
    write_problem_set(cpu_box / "problems", [{"directory": "add", "deadline": "2099-01-01", "devices": ["H100"]}])
    synced = CliRunner().invoke(
        build_app(), ["problems", "sync", "--skip-run", str(cpu_box / "problems" / "test-set.yaml")]
    )
    assert synced.exit_code == 0, synced.output
    (cpu_box / "k.py").write_text(SOLUTION)
    started = time.monotonic()
    result = CliRunner().invoke(build_app(), ["submit", "k.py", "-l", "add", "-d", "H100", "--mode", "test"])
    assert result.exit_code == 1
    assert time.monotonic() - started < 20  # not three attempts with backoff
    text = " ".join(result.output.split())
    assert "this worker has no GPU; the job wants H100 (use -d cpu, or route H100 to a runner that has one)" in text
    assert "not your fault" not in text
