"""Compiling ahead (issue 33's throughput): a GPU run's submission process compiles the platform's own Triton kernel
for its GPU's architecture before the job arrives (``runners.submission.serve.warm_toolchain``), so a candidate's
first Triton call meets a compiler already set up; the architecture comes from the trusted parent (nvidia-smi), and
nothing of it needs a GPU."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from runners import sysinfo
from runners.contract import Mode, RunRequest, SubmissionFile
from runners.entry.admission import job_dirs
from runners.entry.session import Launch, make_shape
from runners.gpus import Gpu
from runners.ipc.wiring import WARM_ENV, WARM_TOOLCHAIN_ONLY


@pytest.fixture(autouse=True)
def _fresh_arch_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sysinfo, "_ARCHS", {})


def test_the_architecture_is_read_from_nvidia_smi_for_the_gpus_index(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def smi(fields: str, fmt: str = "") -> str:
        asked.append(fields)
        return "0, 9.0\n1, 10.0\n"

    monkeypatch.setattr(sysinfo, "smi_query", smi)
    assert sysinfo.compute_arch(0) == "90" and sysinfo.compute_arch(1) == "100"
    assert asked == ["index,compute_cap"]  # asked once: the answer is kept for the process
    assert sysinfo.compute_arch(2) == ""  # no such GPU: asked again, in case it was a hiccup
    assert asked == ["index,compute_cap"] * 2


def test_a_failed_answer_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """nvidia-smi timing out once must not leave the GPU without its warm kernel for the worker's lifetime."""
    answers = iter([None, "0, 9.0\n"])
    monkeypatch.setattr(sysinfo, "smi_query", lambda fields, fmt="": next(answers))
    assert sysinfo.compute_arch(0) == ""
    assert sysinfo.compute_arch(0) == "90"


@pytest.mark.parametrize("answer", [None, "", "0, [N/A]\n", "garbage"])
def test_no_architecture_where_nvidia_smi_cannot_say(monkeypatch: pytest.MonkeyPatch, answer: str | None) -> None:
    monkeypatch.setattr(sysinfo, "smi_query", lambda fields, fmt="": answer)
    assert sysinfo.compute_arch(0) == ""


def _request(device: str) -> RunRequest:
    return RunRequest(problem="p", lang="py", mode=Mode.BENCHMARK, files={}, device=device,
                      submission=SubmissionFile(name="s.py", content=b"x = 1\n"))  # fmt: skip


@pytest.mark.parametrize(
    ("device", "arch", "expected"), [("cuda", "90", "90"), ("cuda", "", WARM_TOOLCHAIN_ONLY), ("cpu", "90", None)]
)
def test_a_gpu_runs_submission_process_is_told_its_architecture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: str, arch: str, expected: str | None
) -> None:
    monkeypatch.setattr(sysinfo, "compute_arch", lambda index: arch)
    gpu = Gpu(index=0, uuid="GPU-aaaa", name="NVIDIA H200", minor=0) if device == "cuda" else None
    shape = make_shape(_request(device), gpu=gpu, python=sys.executable, prefix=[], extra_ro=(), submission_env=None,
                       require_sandbox=False)  # fmt: skip
    launch = Launch(shape, job_dirs(tmp_path, shape.shared_ro), timeout_s=10.0)
    try:
        assert launch.submission.env.get(WARM_ENV) == expected
        assert WARM_ENV not in launch.oracle.env  # the evaluator compiles nothing of this
    finally:
        launch.stop(join_s=1.0)


def test_the_warm_up_compiles_the_platforms_kernel_into_the_jobs_own_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    triton = pytest.importorskip("triton")
    if shutil.which("ptxas") is None and not (Path(triton.__file__).parent / "backends/nvidia/bin/ptxas").exists():
        pytest.skip("no ptxas here (Triton's own or CUDA's)")
    from runners.submission import serve

    cache = tmp_path / "triton"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    serve.warm_toolchain("")  # no architecture: nothing compiled
    serve.warm_toolchain(WARM_TOOLCHAIN_ONLY)  # the parent could not read it: Triton's set-up only
    serve.warm_toolchain("1")  # no GPU's: once read as sm_1, which LLVM refused with a crash report
    assert not any(p.name.endswith((".cubin", ".ptx")) for p in cache.rglob("*"))
    serve.warm_toolchain("90")
    cubins = list(cache.rglob("*.cubin"))
    assert [p.name for p in cubins] == ["_scale.cubin"]  # ours, for sm_90, in this job's cache only
    assert b"sm_90" in next(cache.rglob("_scale.ptx")).read_bytes()
    serve.warm_toolchain("not a number")  # never raises: a failure is left to the submission's own compile
