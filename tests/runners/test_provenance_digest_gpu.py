"""Issue 30's bottleneck digest on a real GPU with Nsight Compute (to run on the lent H200).

Each case is one benchmark-mode run of a single benchmark case with the provenance pass (``provenance="always"``: the
roofline share, the recorded kernels, the digest), then one profile-mode run of that case (Nsight Compute's sections:
the stall reasons), and the case's digest read with those metrics (``runners.provenance_digest.digest``):

- problems/vectoradd's Triton solution at its largest benchmark case (16384²): memory-bound, at least 75% of the DRAM
  bound;
- a naive matmul (tests/runners/fixtures/naive_matmul.py: one thread per output, no tiles) on problems/matmul's
  1024³ case: compute headroom of at least 5x, and its top stall named.

Marked ``gpu``: skipped without CUDA; skipped too where this runner cannot record kernels (no ncu, counters
restricted to administrators). GPU time: one case each, timed for at most half a second, about a minute in all with
the profile runs' replays.

    .venv/bin/python -m pytest -q -n 0 -p no:randomly tests/runners/test_provenance_digest_gpu.py -s
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from leaderboards.problems import load_problem
from runners.compare_profile import profile_request
from runners.contract import BenchmarkResult, Mode, TimingSettings, Verdict
from runners.entry import run_request
from runners.entry.profiling import cannot_record_kernels
from runners.provenance_digest import digest
from runners.settings import RunnerSettings

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]
NAIVE_MATMUL = Path(__file__).resolve().parent / "fixtures" / "naive_matmul.py"


def _digest(problem_dir: Path, file: Path, case: dict[str, object], tmp_path: Path) -> tuple[BenchmarkResult, str]:
    """(the timed case's result, its digest with profile mode's stall reasons) for ``file`` on ``case`` alone."""
    settings = RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True, provenance="always",
                              time_baselines=False)  # fmt: skip
    why = cannot_record_kernels(settings)
    if why:
        pytest.skip(f"this runner cannot record kernels: {why}")
    problem = load_problem(problem_dir)
    request = problem.request(file.name, file.read_bytes(), Mode.BENCHMARK, device="cuda")
    request = request.model_copy(update={"benchmarks": [case], "baselines": []})
    request.timing = TimingSettings(max_time_s=0.5)
    timed = run_request(request, settings=settings)
    assert timed.verdict is Verdict.ACCEPTED, f"{timed.message}\n{timed.stderr[-2000:]}"
    (bench,) = timed.benchmarks
    assert timed.provenance is not None and timed.provenance.collector == "ncu", timed.provenance
    assert bench.digest == digest(bench), "the run's own digest is the one read from its result"
    profiled = run_request(profile_request(request, 0), settings=settings)
    assert profiled.verdict is Verdict.ACCEPTED and profiled.kernel_metrics, profiled.profile
    text = digest(bench, profiled.kernel_metrics)
    print(f"{problem_dir.name} {file.name} {case}: {text}")  # what the note quotes (run with -s)
    return bench, text


def test_the_vectoradd_triton_solution_reads_memory_bound_near_the_dram_bound(tmp_path: Path) -> None:
    problem = REPO / "problems" / "vectoradd"
    largest = max(load_problem(problem).task.benchmarks, key=lambda case: int(case["size"]))
    bench, text = _digest(problem, problem / "solutions" / "correct" / "triton.py", dict(largest), tmp_path)
    assert bench.roofline_limit == "memory" and bench.roofline_share is not None and bench.roofline_share >= 0.75
    share = re.match(r"memory-bound: (\d+)% of the DRAM bound, headroom <= \d+% of the time; dominant kernel ", text)
    assert share is not None and int(share.group(1)) >= 75, text
    assert "_add (own, " in text, text


def test_a_naive_matmul_reads_a_compute_headroom_of_5x_or_more_and_its_top_stall(tmp_path: Path) -> None:
    problem = REPO / "problems" / "matmul"
    smallest = min(load_problem(problem).task.benchmarks, key=lambda c: int(c["m"]) * int(c["k"]) * int(c["n"]))
    bench, text = _digest(problem, NAIVE_MATMUL, dict(smallest), tmp_path)  # 1024³: about a millisecond a call
    assert bench.roofline_limit not in ("", "memory") and bench.roofline_share is not None, bench
    headroom = re.match(
        r"compute-bound: \d+% of the [\w ]+ peak, headroom up to ([\d.]+)x; dominant kernel _matmul_naive \(own, "
        r"\d+% of the recorded time\); top stall [a-z_]+ [\d.e+]+",
        text,
    )
    assert headroom is not None and float(headroom.group(1)) >= 5.0, text
