"""On a GPU: the checks accept what the vendor libraries compute at benchmark sizes, and every problem's largest
benchmark (inputs, reference and check together) fits the memory of a 24 GB L4."""

from __future__ import annotations

import time

import pytest
import torch
from problem_catalog import PROBLEMS, import_reference, single_rank_problem_names

from leaderboards.problems import load_problem

pytestmark = pytest.mark.gpu

L4_BYTES = 24 * 10**9
# Leave a few GB of the L4 for the CUDA context, the harness and the submission's own buffers.
PEAK_BUDGET = 18 * 10**9


@pytest.mark.parametrize("reduced_precision_reduction", [True, False])
def test_matmul_check_accepts_cublas_fp16_at_4096(reduced_precision_reduction: bool) -> None:
    ref = import_reference("matmul")
    data = ref.generate_input(m=4096, k=4096, n=4096, seed=2024)
    assert data[0].is_cuda
    before = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = reduced_precision_reduction
    try:
        output = data[0] @ data[1]  # cuBLAS's own fp16 result
    finally:
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = before
    ok, message = ref.check_implementation(data, output)
    assert ok, message


def test_conv2d_check_accepts_cudnn_tf32_at_the_largest_benchmark() -> None:
    ref = import_reference("conv2d")
    case = max(load_problem(PROBLEMS / "conv2d").task.benchmarks, key=lambda c: ref.speed_of_light(**c)["flops"])
    data = ref.generate_input(**case)
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=True):
        output = torch.nn.functional.conv2d(*data)
    ok, message = ref.check_implementation(data, output)
    assert ok, message


@pytest.mark.parametrize("name", single_rank_problem_names())  # (several ranks: test_multigpu_problems.py)
def test_largest_benchmark_checks_on_the_gpu_and_fits_an_l4(name: str) -> None:
    ref = import_reference(name)
    task = load_problem(PROBLEMS / name).task
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    for case in task.benchmarks:
        data = ref.generate_input(**case)
        output = ref.ref_kernel(data)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        ok, message = ref.check_implementation(data, output)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
        assert ok, f"{name} {case}: the reference fails its own check: {message}"
        assert elapsed < 10, f"{name} {case}: the check took {elapsed:.1f} s"
        del data, output
    peak = torch.cuda.max_memory_allocated()
    print(f"{name}: peak {peak / 1e9:.2f} GB over its benchmarks")
    assert peak < PEAK_BUDGET, f"{name}: {peak / 1e9:.1f} GB at its largest benchmark; an L4 has {L4_BYTES / 1e9:.0f}"
