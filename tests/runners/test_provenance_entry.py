"""The provenance pass's place in the entry (runners/entry/__init__.py), on the CPU: a problem with a library
policy refuses a runner that cannot record kernels, and the pass's record turns into each case's ``kernels`` and,
under the policy, a rejection that names the share (the pass itself, under Nsight Compute, is
test_provenance_gpu.py's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import runners.entry as entry
from leaderboards.problems import load_problem
from runners.contract import BenchmarkResult, KernelMetrics, Mode, RunResult, TimingStats, Verdict
from runners.entry import run_request
from runners.provenance import LibraryPolicy
from runners.settings import RunnerSettings

REPO = Path(__file__).resolve().parents[2]
POLICY = LibraryPolicy(deny=["cublas", "cublaslt", "cudnn", "aten_mm"])


def test_a_problem_with_a_policy_refuses_a_runner_that_cannot_record_kernels() -> None:
    problem = load_problem(REPO / "problems" / "matmul_own")
    request = problem.request("triton.py", b"def custom_kernel(data):\n    return data[0]\n", Mode.RANKED,
                              device="cuda")  # fmt: skip
    assert request.library_policy == POLICY
    result = run_request(request, settings=RunnerSettings(ncu=False))
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR and result.fault == "runner"
    assert result.message == ("this runner cannot check the library policy (Nsight Compute is switched off on this "
                              "runner (KERNELCUP_NCU=false)), which problem 'matmul_own' has")  # fmt: skip
    assert not result.system.ran


def _timed(medians: list[float]) -> RunResult:
    stats = [TimingStats(samples=9, median_ns=m, mean_ns=m, std_ns=1, stderr_ns=1, min_ns=m, max_ns=m) for m in medians]
    benches = [BenchmarkResult(index=i, case={"m": i}, verdict=Verdict.ACCEPTED, stats=s) for i, s in enumerate(stats)]
    return RunResult(verdict=Verdict.ACCEPTED, mode=Mode.RANKED, benchmarks=benches, score_ns=sum(medians))


def _pass_recording(monkeypatch: pytest.MonkeyPatch, names: list[tuple[str, float]]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def fake_run(request: Any, *args: Any, **kwargs: Any) -> RunResult:
        calls.append({"mode": request.mode, "tests": request.tests, **kwargs})
        metrics = [KernelMetrics(name=n, duration_ns=d, grid="(1, 1, 1)", block="(128, 1, 1)") for n, d in names]
        return RunResult(verdict=Verdict.ACCEPTED, mode=Mode.PROFILE, kernel_metrics=metrics)

    monkeypatch.setattr(entry, "_run", fake_run)
    monkeypatch.setattr(entry, "cannot_record_kernels", lambda settings: "")
    return calls


def test_the_pass_rejects_a_library_gemm_naming_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    spin = ("at::cuda::<unnamed>::spin_kernel(long)", 900.0)
    calls = _pass_recording(monkeypatch, [spin, ("_token", 1760.0), ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT",
                                          181_664.0), spin, ("_mm", 217_408.0)])  # fmt: skip
    request = load_problem(REPO / "problems" / "matmul_own").request("d.py", b"", Mode.RANKED, device="cuda")
    request = request.model_copy(update={"benchmarks": request.benchmarks[:2]})
    result = entry._with_provenance(request, _timed([185_000.0, 220_000.0]), RunnerSettings(), False, None, None,
                                    None)  # fmt: skip
    assert calls[0]["mode"] is Mode.PROFILE and calls[0]["tests"] == [] and calls[0]["provenance_pass"]
    assert result.verdict is Verdict.REJECTED and result.rejection == "library_policy" and result.score_ns is None
    assert result.message.startswith("benchmark 1: 99% of the time in nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT "
                                     "(cuBLASLt), which this problem does not allow")  # fmt: skip
    first, second = (b.kernels for b in result.benchmarks)
    assert first is not None and [k.library for k in first.kernels] == ["cublaslt", "own"] and first.kernels[0].denied
    assert second is not None and second.coverage == pytest.approx(217_408 / 220_000, abs=1e-4)
    assert result.provenance is not None and result.provenance.collector == "ncu"
    assert result.provenance.policy == "denies cuBLAS, cuBLASLt, cuDNN, ATen matmul"
    assert "provenance" in result.phase_times


def test_without_a_policy_the_record_is_carried_and_the_verdict_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    _pass_recording(monkeypatch, [("spin_kernel", 900.0), ("nvjet_sm90_x", 10_000.0)])
    request = load_problem(REPO / "problems" / "matmul").request("d.py", b"", Mode.BENCHMARK, device="cuda")
    request = request.model_copy(update={"benchmarks": request.benchmarks[:1]})
    result = entry._with_provenance(request, _timed([100_000.0]), RunnerSettings(), False, None, None, None)
    assert result.verdict is Verdict.ACCEPTED and result.score_ns == 100_000.0
    kernels = result.benchmarks[0].kernels
    assert kernels is not None and kernels.coverage == 0.1 and not kernels.kernels[0].denied
    assert result.provenance is not None and "under 80%" in result.provenance.note


def test_a_failed_pass_is_said_and_under_a_policy_rejects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entry, "cannot_record_kernels", lambda settings: "")
    monkeypatch.setattr(entry, "_run", lambda *a, **k: RunResult(verdict=Verdict.RUNTIME_ERROR, mode=Mode.PROFILE,
                                                                 message="custom_kernel raised"))  # fmt: skip
    request = load_problem(REPO / "problems" / "matmul_own").request("d.py", b"", Mode.RANKED, device="cuda")
    request = request.model_copy(update={"benchmarks": request.benchmarks[:1]})
    result = entry._with_provenance(request, _timed([1000.0]), RunnerSettings(), False, None, None, None)
    assert result.verdict is Verdict.REJECTED
    assert result.message == ("the library policy could not be checked: the provenance pass failed: runtime error: "
                              "custom_kernel raised")  # fmt: skip
    assert result.provenance is not None and result.provenance.collector == "none"


def test_without_ncu_the_torch_profilers_names_are_carried_and_said_to_be_the_submissions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = (REPO / "tests" / "runners" / "fixtures" / "torch_table.txt").read_text().format(i=1)
    monkeypatch.setattr(entry, "cannot_record_kernels", lambda settings: "Nsight Compute (ncu) is not installed")
    monkeypatch.setattr(entry, "_run", lambda *a, **k: RunResult(verdict=Verdict.ACCEPTED, mode=Mode.PROFILE,
                                                                 profile=table))  # fmt: skip
    request = load_problem(REPO / "problems" / "matmul").request("d.py", b"", Mode.BENCHMARK, device="cuda")
    request = request.model_copy(update={"benchmarks": request.benchmarks[:1]})
    result = entry._with_provenance(request, _timed([185_000.0]), RunnerSettings(), False, None, None, None)
    assert result.verdict is Verdict.ACCEPTED and result.provenance is not None
    assert result.provenance.collector == "torch" and "its word for them" in result.provenance.note
    kernels = result.benchmarks[0].kernels
    assert kernels is not None and kernels.kernels[0].library == "cublaslt"


@pytest.mark.parametrize(
    ("setting", "mode", "policy", "wanted"),
    [
        ("ranked", Mode.RANKED, False, True),
        ("ranked", Mode.BENCHMARK, False, False),  # the iteration loop keeps its turnaround (7-10 s a pass, H200)
        ("ranked", Mode.BENCHMARK, True, True),  # a policy is always checked
        ("policy", Mode.RANKED, False, False),
        ("policy", Mode.BENCHMARK, True, True),
        ("always", Mode.BENCHMARK, False, True),
        ("off", Mode.RANKED, True, False),
    ],
)
def test_which_timed_runs_get_the_pass(setting: str, mode: Mode, policy: bool, wanted: bool) -> None:
    problem = load_problem(REPO / "problems" / ("matmul_own" if policy else "matmul"))
    request = problem.request("d.py", b"", mode, device="cuda")
    assert entry._wants(request, RunnerSettings(provenance=setting)) is wanted  # type: ignore[arg-type]


def test_a_runner_with_the_pass_off_refuses_a_problem_with_a_policy() -> None:
    problem = load_problem(REPO / "problems" / "matmul_own")
    request = problem.request("t.py", b"def custom_kernel(data):\n    return data[0]\n", Mode.BENCHMARK, device="cuda")
    result = run_request(request, settings=RunnerSettings(provenance="off"))
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR and result.fault == "runner"
    assert "KERNELCUP_PROVENANCE=off" in result.message and not result.system.ran
