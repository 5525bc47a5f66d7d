"""A local runner serves only the device it has: a job for another GPU (or any GPU, on a machine without one) is
refused at once, as a configuration problem, before anything runs."""

from __future__ import annotations

import asyncio

import pytest

from runners.contract import Limits, Mode, RunRequest, SubmissionFile
from runners.devices import device_mismatch, gpu_matches
from runners.launchers.base import DeviceUnavailable
from runners.launchers.local import LocalLauncher
from runners.settings import RunnerSettings


@pytest.mark.parametrize(
    ("device_name", "gpu", "ok"),
    [
        ("H100", "NVIDIA H100 80GB HBM3", True),
        ("h100", "NVIDIA H100 PCIe", True),
        ("A100", "NVIDIA A100-SXM4-80GB", True),
        ("L4", "NVIDIA L4", True),
        ("L4", "NVIDIA L40S", False),  # a prefix is not the model
        ("H100", "NVIDIA A100-SXM4-80GB", False),
        ("RTX4090", "NVIDIA GeForce RTX 4090", True),
        ("T4", "Tesla T4", True),
    ],
)
def test_gpu_names_match_by_model(device_name: str, gpu: str, ok: bool) -> None:
    assert gpu_matches(device_name, gpu) is ok


def test_mismatch_says_what_this_worker_has_and_what_to_do() -> None:
    assert device_mismatch("cpu", "cpu", None) is None
    assert device_mismatch("cuda", "cuda", "NVIDIA L4") is None  # `kernelcup run --device cuda`: any GPU
    assert device_mismatch("cuda", "H100", None) == (
        "this worker has no GPU; the job wants H100 (use -d cpu, or route H100 to a runner that has one)"
    )
    assert device_mismatch("cuda", "H100", "NVIDIA L4") == (
        "this worker has NVIDIA L4; the job wants H100 (use -d cpu, or route H100 to a runner that has one)"
    )


def request(device: str, device_name: str) -> RunRequest:
    return RunRequest(
        problem="add",
        lang="py",
        mode=Mode.TEST,
        files={},
        submission=SubmissionFile(name="s.py", content=b"def custom_kernel(d):\n    return d\n"),
        tests=[{"size": 3}],
        benchmarks=[],
        device=device,
        device_name=device_name,
        limits=Limits(),
    )


def test_local_launcher_refuses_a_gpu_job_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import runners.entry
    import runners.sysinfo

    monkeypatch.setattr(runners.sysinfo, "gpu_query", lambda: None)
    monkeypatch.setattr(runners.entry, "run_request", lambda *a, **k: pytest.fail("nothing may run"))
    launcher = LocalLauncher(RunnerSettings())
    with pytest.raises(DeviceUnavailable, match="this worker has no GPU; the job wants H100"):
        asyncio.run(launcher.run(request("cuda", "H100"), job=None))  # type: ignore[arg-type]
    assert launcher.cannot_serve("H100") is not None and launcher.cannot_serve("cpu") is None


def test_local_launcher_with_another_gpu_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import runners.sysinfo

    monkeypatch.setattr(runners.sysinfo, "gpu_query", lambda: {"name": "NVIDIA L4", "driver": "550", "count": 1})
    launcher = LocalLauncher(RunnerSettings())
    assert launcher.cannot_serve("L4") is None
    assert launcher.cannot_serve("H100") == (
        "this worker has NVIDIA L4; the job wants H100 (use -d cpu, or route H100 to a runner that has one)"
    )
