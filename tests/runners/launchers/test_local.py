"""The local launcher: the harness in a worker thread, progress forwarded to the job, the loop never blocked."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from harness_helpers import build_request

from runners.contract import Verdict
from runners.launchers.base import Launcher, LauncherError
from runners.launchers.local import LocalLauncher
from runners.settings import RunnerSettings


def _launcher(tmp_path: Path, **settings: object) -> LocalLauncher:
    return LocalLauncher(RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True, **settings))


def test_runs_the_request_forwards_progress_and_keeps_the_loop_free(tmp_path: Path, job) -> None:
    async def body() -> None:
        launcher = _launcher(tmp_path)
        assert isinstance(launcher, Launcher) and launcher.name == "local"
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.05)

        tick = asyncio.create_task(ticker())
        result = await launcher.run(build_request("submissions/correct_torch.py"), job)
        done.set()
        await tick
        assert result.verdict is Verdict.ACCEPTED, result.message
        assert ticks >= 10  # the loop kept running while the harness worked (it takes seconds)
        phases = [text.split(":")[0] for kind, text in job.log if kind == "progress"]
        assert phases[0] == "starting" and phases[-1] == "done" and "testing" in phases
        assert not list((tmp_path / "jobs").iterdir())  # the job folder is removed afterwards

    asyncio.run(body())


def test_a_submission_fault_is_a_result_not_an_exception(tmp_path: Path, job) -> None:
    async def body() -> None:
        result = await _launcher(tmp_path).run(build_request("submissions/raises.py"), job)
        assert result.verdict is Verdict.RUNTIME_ERROR

    asyncio.run(body())


def test_check_reports_the_machine_and_refuses_an_unsandboxed_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def body() -> None:
        status = await _launcher(tmp_path).check()
        assert status.startswith("local: ") and ("GPU" in status or "cpu only" in status)
        assert f"{PY} ok, CUDA C++" in status  # every language runtime's self-test (issue 12)
        import runners.sandbox

        monkeypatch.setattr(runners.sandbox, "probe_sandbox", lambda *a: (None, False, "bwrap not found"))
        strict = LocalLauncher(RunnerSettings(allow_unsandboxed=False))
        with pytest.raises(LauncherError, match="KERNELCUP_ALLOW_UNSANDBOXED"):
            await strict.check()

    asyncio.run(body())


PY = "languages: Python (PyTorch, Triton, inline CUDA)"


def test_the_language_report_runs_every_runtime_self_test(monkeypatch: pytest.MonkeyPatch) -> None:
    from runners.contract import Language
    from runners.launchers.local import language_report
    from runners.submission.languages import RUNTIMES, CudaRuntime

    assert set(RUNTIMES) == set(Language)  # one runtime class per language of the contract's table
    monkeypatch.setattr(CudaRuntime, "self_test", classmethod(lambda cls: "nvcc was not found on this runner"))
    assert language_report().startswith(f"{PY} ok, CUDA C++: nvcc was not found on this runner, CUTLASS")
    monkeypatch.setattr(CudaRuntime, "self_test", classmethod(lambda cls: None))
    dsls = f"{HELION} ok, {TILELANG} ok, {CUTE_DSL} ok"
    assert language_report() == f"{PY} ok, CUDA C++ ok, {CUTLASS} ok, {TK} ok, {dsls}"


CUTLASS, TK = "CUTLASS / CuTe C++ (CUDA)", "ThunderKittens (CUDA C++20, Hopper)"
HELION, TILELANG = "Helion (Python DSL over Triton)", "TileLang (Python DSL over TVM)"
CUTE_DSL = "CuTe DSL (CUTLASS Python)"


def test_the_language_report_says_which_libraries_this_runner_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runners.launchers.local import language_report
    from runners.submission.languages import CudaRuntime

    monkeypatch.setattr(CudaRuntime, "self_test", classmethod(lambda cls: None))
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "kittens.cuh").write_text("#pragma once\n")
    settings = RunnerSettings(cutlass_include=tmp_path / "nothing", thunderkittens_include=tmp_path / "include")
    report = language_report(settings)
    assert f"CUDA C++ ok, {CUTLASS}: this runner does not offer CUTLASS: {tmp_path / 'nothing'}" in report
    assert f"{TK} ok, {HELION}" in report  # the Python DSLs follow, each ok or naming the package to install
    assert f"{CUTE_DSL} ok" in report or "pip install nvidia-cutlass-dsl" in report
