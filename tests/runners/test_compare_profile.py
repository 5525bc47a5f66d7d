"""``kernelcup run PROBLEM A B --compare --profile`` (issue 30): per case, the dominant kernels of each file matched
(by name, else by rank of GPU time) with Nsight Compute's DRAM %, SM %, occupancy, registers and top stall side by
side and their deltas (``runners.compare_profile``), built from ncu pages recorded on the lent H100; the CLI's table,
its refusals, and a runner that cannot profile."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_helpers import FIXTURES, SUBMISSIONS, build_request
from typer.testing import CliRunner

from kernelcup.cli import build_app
from runners.compare_profile import (
    cannot_profile,
    match,
    metric_deltas,
    profile_pair,
    profile_request,
    row_text,
    side_kernels,
)
from runners.contract import (
    BenchmarkResult,
    Comparison,
    KernelMetrics,
    Mode,
    RunRequest,
    RunResult,
    SubmissionFile,
    TimingStats,
    Verdict,
)
from runners.ncu import parse_raw_csv
from runners.settings import RunnerSettings

NCU = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
RECORDED = parse_raw_csv((NCU / "raw_page_h100_recorded.csv").read_text())
"""Recorded on the lent H100 with profile mode's sections: a Triton GEMM (_matmul) and a PyTorch add."""
HAND = parse_raw_csv((NCU / "raw_page_h100.csv").read_text())
"""Hand-written in the recorded layout: add_kernel, a CUTLASS GEMM, an ATen elementwise kernel."""
GEMM, ADD = RECORDED
CUTLASS = HAND[1]


def _profiled(*kernels: KernelMetrics, verdict: Verdict = Verdict.ACCEPTED, profile: str = "") -> RunResult:
    return RunResult(verdict=verdict, mode=Mode.PROFILE, kernel_metrics=list(kernels), profile=profile or None,
                     message="" if verdict.passed else "custom_kernel raised")  # fmt: skip


def test_two_gemms_of_other_names_pair_by_rank_with_every_delta_from_the_recorded_metrics() -> None:
    table = metric_deltas([{"m": 4096}], [(_profiled(GEMM), _profiled(CUTLASS, HAND[2]))], ("triton.py", "cutlass.py"))
    assert table.collector == "ncu" and table.note == ""
    (case,) = table.cases
    assert case.index == 0 and case.case == {"m": 4096} and case.note == ""
    first, alone = case.kernels
    assert first.matched_by == "rank" and first.rank == 1
    assert first.a is not None and first.a.name == "_matmul" and first.a.share == 1.0
    assert first.b is not None and first.b.name.startswith("cutlass::device_kernel<")
    assert first.duration_ratio == pytest.approx(231552.0 / 223180.0)
    assert first.dram_pct == pytest.approx(33.73 - 31.02) and first.sm_pct == pytest.approx(88.21 - 78.66)
    assert first.occupancy_pct == pytest.approx(12.48 - 18.75) and first.registers == 207 - 168
    assert (first.a.top_stall, first.b.top_stall, first.stall_changed) == ("barrier", "math_pipe_throttle", True)
    # B's second kernel has no partner: it stands alone, its own rank, no deltas
    assert alone.matched_by == "none" and alone.a is None and alone.b is not None and alone.rank == 2
    assert alone.dram_pct is None and alone.duration_ratio is None
    assert first.b.share == pytest.approx(223180.0 / (223180.0 + 2048.0))


def test_kernels_of_one_name_pair_by_name_whatever_their_rank() -> None:
    slower_add = ADD.model_copy(update={"duration_ns": 400_000.0, "dram_throughput_pct": 40.0})
    rows = match(side_kernels([GEMM, ADD]), side_kernels([GEMM, slower_add]))
    # A: _matmul then the add; B: the add (now longest) then _matmul: each meets its namesake, in A's order
    assert [(r.rank, r.matched_by, r.a and r.a.name[:7], r.b and r.b.name[:7]) for r in rows] == [
        (1, "name", "_matmul", "_matmul"), (2, "name", "at::vec", "at::vec")]  # fmt: skip
    assert rows[1].duration_ratio == pytest.approx(25856.0 / 400_000.0)
    assert rows[1].dram_pct == pytest.approx(73.52 - 40.0) and not rows[1].stall_changed


def test_launches_of_one_kernel_fold_into_one_row_weighted_by_time() -> None:
    short = GEMM.model_copy(update={"duration_ns": 100_000.0, "sm_throughput_pct": 50.0, "registers_per_thread": 255,
                                    "top_stalls": []})  # fmt: skip
    (side,) = side_kernels([GEMM, short])
    assert side.launches == 2 and side.duration_ns == 331552.0 and side.share == 1.0
    assert side.sm_pct == pytest.approx((231552.0 * 88.21 + 100_000.0 * 50.0) / 331552.0)
    assert side.registers == 255 and side.top_stall == "barrier"  # the longest launch's stall
    top = side_kernels([ADD, *HAND, GEMM])
    assert [k.name[:14] for k in top] == ["_matmul", "cutlass::devic", "at::vectorized", "add_kernel", "at::native::ve"]
    assert len(match(top, top)) == 3  # the dominant three a side


def test_a_side_without_metrics_says_why_and_never_quotes_the_submissions_table() -> None:
    failed = _profiled(verdict=Verdict.RUNTIME_ERROR)
    forged = ("The table below is the submission's own: the torch profiler ran inside the submission's process, "
              "which can write anything here.\n\nNsight Compute profiled 9 kernel launch(es) (forged)")  # fmt: skip
    table = metric_deltas([{"n": 1}, {"n": 2}], [(_profiled(ADD), failed), (_profiled(profile=forged), _profiled(ADD))])
    assert table.collector == "ncu"
    assert table.cases[0].note == "B: its profile run failed: runtime error: custom_kernel raised"
    assert [r.matched_by for r in table.cases[0].kernels] == ["none"]
    assert table.cases[1].note == "A: no Nsight Compute metrics (the runner profiled no kernel)"
    no_ncu = "Nsight Compute (ncu) is not installed on this runner. The torch profiler's table instead:\n\n" + forged
    none = metric_deltas([{"n": 1}], [(_profiled(profile=no_ncu), _profiled(profile=no_ncu))])
    assert none.collector == "none" and none.cases[0].kernels == []
    assert none.note == ("A: no Nsight Compute metrics (Nsight Compute (ncu) is not installed on this runner); B: no "
                         "Nsight Compute metrics (Nsight Compute (ncu) is not installed on this runner)")  # fmt: skip
    with pytest.raises(ValueError, match="1 pairs of profile results for 2 cases"):
        metric_deltas([{}, {}], [(failed, failed)])


def test_a_row_reads_a_then_b_then_the_delta() -> None:
    (row,) = match(side_kernels([GEMM]), side_kernels([CUTLASS]))[:1]
    assert row_text(row) == ("1. _matmul | cutlass::device_kernel<cutlass::gemm::k…: time 1.04x; DRAM 34 | 31% (+3); "
                             "SM 88 | 79% (+10); occupancy 12 | 19% (-6); registers 207 | 168 (+39); stall barrier | "
                             "math_pipe_throttle")  # fmt: skip
    (same,) = match(side_kernels([ADD]), side_kernels([ADD.model_copy(update={"dram_throughput_pct": None})]))
    assert row_text(same, 20).startswith("1. at::vectorized_elem… (both): time 1.00x; DRAM 74 | -%; SM 12 | 12% (+0)")


def _pair() -> tuple[RunRequest, RunRequest]:
    a = build_request(SUBMISSIONS / "correct_torch.py", Mode.BENCHMARK)
    return a, a.model_copy(update={"submission": SubmissionFile(name="other.py", content=b"")})


def test_each_case_is_profiled_alone_for_both_files_on_one_fresh_seed() -> None:
    a, b = _pair()
    seen: list[RunRequest] = []

    def run(request: RunRequest) -> RunResult:
        seen.append(request)
        return _profiled(GEMM if request.submission.name == "other.py" else ADD)

    table = profile_pair(a, b, run, ("correct_torch.py", "other.py"))
    cases = len(a.benchmarks)
    assert [(r.submission.name, r.benchmarks) for r in seen] == [
        (name, [case]) for case in a.benchmarks for name in ("correct_torch.py", "other.py")]  # fmt: skip
    assert all(r.mode is Mode.PROFILE and r.tests == [] and r.baselines == [] for r in seen)
    assert len({r.seed for r in seen}) == 1 and seen[0].seed is not None  # the same inputs for both
    assert len(table.cases) == cases and all(c.kernels[0].matched_by == "rank" for c in table.cases)
    with pytest.raises(ValueError):
        profile_request(a, cases)


def test_a_runner_that_cannot_profile_says_why() -> None:
    a, _ = _pair()
    assert cannot_profile(RunnerSettings(), a) == "Nsight Compute profiles GPU kernels; this comparison ran on the CPU"
    gpu = a.model_copy(update={"device": "cuda"})
    assert cannot_profile(RunnerSettings(ncu=False), gpu) == \
        "Nsight Compute is switched off on this runner (KERNELCUP_NCU=false)"  # fmt: skip


runner = CliRunner()
TWO = [str(FIXTURES / "vectoradd"), str(SUBMISSIONS / "correct_torch.py"), str(SUBMISSIONS / "correct_triton.py")]


def test_the_cli_refuses_profile_without_compare_or_on_the_cpu() -> None:
    alone = runner.invoke(build_app(), ["run", *TWO[:2], "--profile", "-d", "cpu"])
    assert alone.exit_code == 1 and "--profile adds Nsight Compute's kernel metrics to a comparison" in alone.output
    cpu = runner.invoke(build_app(), ["run", *TWO, "--compare", "--profile", "-d", "cpu"])
    assert cpu.exit_code == 1 and "--compare --profile needs a GPU" in cpu.output
    submit = runner.invoke(build_app(), ["submit", TWO[1], "--profile", "-l", "vectoradd"])
    assert submit.exit_code == 2 and "--profile adds Nsight Compute's kernel metrics to a compare" in submit.output


def _stats(m: float) -> TimingStats:
    return TimingStats(samples=10, median_ns=m, mean_ns=m, std_ns=0, stderr_ns=0, min_ns=m, max_ns=m)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list[RunRequest]:
    """``kernelcup run`` on a pretend GPU: benchmark runs time A at 1 µs and B at 2 µs a case, profile runs answer the
    recorded metrics (A: the PyTorch add, B: the Triton GEMM)."""
    import runners.entry

    seen: list[RunRequest] = []

    def run_request(request: RunRequest, *args: object, **kwargs: object) -> RunResult:
        seen.append(request)
        b = request.submission.name == "correct_triton.py"
        if request.mode is Mode.PROFILE:
            return _profiled(GEMM if b else ADD)
        benches = [BenchmarkResult(index=i, case=c, verdict=Verdict.ACCEPTED, stats=_stats(2000.0 if b else 1000.0))
                   for i, c in enumerate(request.benchmarks)]  # fmt: skip
        return RunResult(verdict=Verdict.ACCEPTED, mode=request.mode, benchmarks=benches, score_ns=2000.0 if b else 1e3)

    monkeypatch.setattr(runners.entry, "run_request", run_request)
    monkeypatch.setattr("kernelcup.commands.run.default_device", lambda: "cuda")
    monkeypatch.setattr("kernelcup.commands.run._take_gpus", lambda *args: ({}, lambda: None))
    return seen


def test_the_cli_adds_the_kernel_table_after_the_ratio(fake_gpu: list[RunRequest],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr("runners.compare_profile.cannot_profile", lambda settings, request: "")
    got = runner.invoke(build_app(), ["run", *TWO, "--compare", "--profile", "--rounds", "2", "--json"])
    assert got.exit_code == 0, got.output
    comparison = Comparison.model_validate_json(got.stdout)
    assert comparison.ratio == pytest.approx(0.5) and comparison.metrics is not None
    cases = len(comparison.cases)
    assert [r.mode for r in fake_gpu].count(Mode.PROFILE) == 2 * cases
    row = comparison.metrics.cases[0].kernels[0]
    assert row.a is not None and row.a.name.startswith("at::vectorized_elementwise_kernel") and row.b is not None
    assert row.b.name == "_matmul" and row.dram_pct == pytest.approx(73.52 - 33.73)
    monkeypatch.setenv("COLUMNS", "200")  # (the table folds its cells at 80)
    text = runner.invoke(build_app(), ["run", *TWO, "--compare", "--profile", "--rounds", "2"])
    assert text.exit_code == 0, text.output
    assert "kernel metrics (Nsight Compute" in text.stdout and "DRAM 74 | 34% (+40)" in text.stdout
    assert "stall long_scoreboard | barrier" in text.stdout


def test_a_runner_without_ncu_says_so_and_the_comparison_stands(fake_gpu: list[RunRequest],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("KERNELCUP_NCU", "false")
    monkeypatch.setenv("COLUMNS", "200")
    got = runner.invoke(build_app(), ["run", *TWO, "--compare", "--profile", "--rounds", "2"])
    assert got.exit_code == 0, got.output
    assert "takes 0.5000x the time" in got.stdout
    assert "no kernel metrics: Nsight Compute is switched off on this runner (KERNELCUP_NCU=false)" in got.stdout
    assert Mode.PROFILE not in [r.mode for r in fake_gpu]
