"""Attacks on the harness that need more than a cheat file: a problem shaped a particular way, or the sandbox's view
of the machine (docs/redteam-2026-11-23.md). Each one that gets through today is a strict expected failure."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness_helpers import CHEATS, FIXTURES, QUICK_TIMING, SUBMISSIONS

from leaderboards.problems import ProblemFormatError, load_problem
from runners.contract import Mode, TimingSettings, Verdict
from runners.entry import run_request
from runners.settings import RunnerSettings


def _unseeded_problem(root: Path) -> Path:
    """The fixture vectoradd whose benchmark cases name no seed (generate_input has a default one)."""
    root.mkdir()
    reference = (FIXTURES / "vectoradd" / "reference.py").read_text()
    (root / "reference.py").write_text(reference.replace("def generate_input(size: int, seed: int):",
                                                         "def generate_input(size: int, seed: int = 7):"))
    (root / "task.yml").write_text(
        "description: out = a + b\nlang: py\ntests:\n  - {size: 7, seed: 2}\nbenchmarks:\n  - {size: 4096}\n"
        "  - {size: 65536}\nranked_timeout_s: 60\n"
    )
    return root


def test_a_ranked_case_without_a_seed_still_checks_what_it_times(
    tmp_path: Path, runner_settings: RunnerSettings
) -> None:
    try:
        problem = load_problem(_unseeded_problem(tmp_path / "unseeded"))
    except ProblemFormatError:
        return  # refusing such a problem is a fix too
    cheat = CHEATS / "stale_after_first_timed.py"  # right until its first timed call of a case, then NaN at once
    request = problem.request("submission.py", cheat.read_bytes(), Mode.RANKED, device="cpu", device_name="cpu",
                              seed=20261122)  # fmt: skip
    request.timing = QUICK_TIMING
    result = run_request(request, settings=runner_settings)
    # Refused as the problem's fault (no fresh inputs to rank with), or caught by the check of every timed output.
    refused = result.verdict is Verdict.INFRASTRUCTURE_ERROR and "have no seed" in result.message
    assert refused or result.verdict is Verdict.WRONG_ANSWER, f"{result.verdict}: {result.message}"


def test_a_benchmark_run_times_fresh_inputs_so_no_answer_comes_from_a_cache(
    runner_settings: RunnerSettings,
) -> None:
    """Plain benchmark mode too: a file that remembers its answers by the inputs' content hits its cache on every
    timed call of the same public input (red team, 2026-11-25: a 20 ms miss timed as µs). Each timed call now gets
    inputs of its own from a random secret, so the cache only ever misses."""
    problem = load_problem(FIXTURES / "vectoradd")
    cheat = CHEATS / "cache_by_content.py"  # a miss sleeps 20 ms
    request = problem.request("submission.py", cheat.read_bytes(), Mode.BENCHMARK, device="cpu", device_name="cpu")
    request.timing = QUICK_TIMING
    result = run_request(request, settings=runner_settings)
    assert result.verdict is Verdict.ACCEPTED, f"{result.verdict}: {result.message}"
    medians = [b.stats.median_ns for b in result.benchmarks if b.stats is not None]
    assert medians and all(m >= 20e6 for m in medians), medians


def test_a_case_whose_check_eats_its_time_budget_says_so(tmp_path: Path, runner_settings: RunnerSettings) -> None:
    """A problem whose check is slow at benchmark size leaves a case with fewer samples than asked for (the red team
    saw a ranked score from one): the result says how many and how long the check took."""
    root = tmp_path / "slow_check"
    shutil.copytree(FIXTURES / "vectoradd", root)
    reference = root / "reference.py"
    reference.write_text(reference.read_text().replace(
        "def check_implementation(data, output):\n",
        "def check_implementation(data, output):\n    if data[0].numel() > 1000:\n        import time\n"
        "        time.sleep(0.15)\n",
    ))  # fmt: skip
    problem = load_problem(root)
    solution = (SUBMISSIONS / "correct_torch.py").read_bytes()
    request = problem.request("submission.py", solution, Mode.BENCHMARK, device="cpu", device_name="cpu")
    request.timing = TimingSettings(warmup_ms=5, warmup_min_calls=2, min_samples=50, max_samples=100, max_time_s=0.3)
    result = run_request(request, settings=runner_settings)
    assert result.verdict is Verdict.ACCEPTED, result.message
    slow = [b for b in result.benchmarks if b.stats is not None and b.stats.samples < 50]
    assert slow and all("the problem's check of the outputs took" in b.message for b in slow), [
        (b.stats and b.stats.samples, b.message) for b in result.benchmarks
    ]


def test_a_cuda_library_that_cannot_get_memory_counts_as_out_of_memory() -> None:
    """Red team, 2026-11-25: with every byte of the GPU taken by the submission, the check's first cuBLAS handle
    failed NOT_INITIALIZED, which did not read as out-of-memory, and the problem was blamed."""
    from runners.oracle.evaluate import Evaluator

    evaluator = Evaluator.__new__(Evaluator)
    cublas = RuntimeError("CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`")
    assert evaluator._is_oom(cublas) and evaluator._is_oom(RuntimeError("CUDNN_STATUS_ALLOC_FAILED"))
    assert evaluator._is_oom(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not evaluator._is_oom(RuntimeError("CUBLAS_STATUS_INVALID_VALUE when calling `cublasGemmEx`"))
