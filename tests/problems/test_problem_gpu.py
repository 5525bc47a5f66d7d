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


def _largest(name: str) -> tuple:
    """The problem's reference and the inputs of its benchmark with the most flops."""
    ref = import_reference(name)
    case = max(load_problem(PROBLEMS / name).task.benchmarks, key=lambda c: ref.speed_of_light(**c)["flops"])
    return ref, ref.generate_input(**case)


def test_layernorm_check_accepts_torch_layer_norm_in_the_input_dtype() -> None:
    ref = import_reference("layernorm")
    for case in load_problem(PROBLEMS / "layernorm").task.benchmarks:  # fp16 and bf16
        x, weight, bias = data = ref.generate_input(**case)
        output = torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)  # CUDA: fp32 inside
        ok, message = ref.check_implementation(data, output)
        assert ok, f"{case}: {message}"


@pytest.mark.parametrize("backend", ["FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"])
def test_attention_check_accepts_torch_sdpa_backends_at_the_largest_benchmark(backend: str) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ref, data = _largest("attention")
    try:
        with sdpa_kernel(getattr(SDPBackend, backend)):
            output = torch.nn.functional.scaled_dot_product_attention(*data, is_causal=True)
    except RuntimeError as error:  # the backend is not built in or does not take these inputs on this GPU
        pytest.skip(f"{backend}: {error}")
    ok, message = ref.check_implementation(data, output)
    assert ok, message


def test_fp8_gemm_check_accepts_cublas_scaled_mm_at_the_largest_benchmark() -> None:
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("no fp8 tensor cores before sm_89")
    ref, (a, b, scale_a, scale_b) = _largest("fp8_gemm")
    output = torch._scaled_mm(a, b.T, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16, use_fast_accum=False)
    ok, message = ref.check_implementation((a, b, scale_a, scale_b), output)
    assert ok, message


@pytest.mark.parametrize("how", ["grouped_mm", "per-group cuBLAS, reduced-precision reductions"])
def test_grouped_gemm_check_accepts_vendor_results_at_the_largest_benchmark(how: str) -> None:
    ref, (a, weights, offsets) = _largest("grouped_gemm")
    if how == "grouped_mm":
        if torch.cuda.get_device_capability() < (9, 0) or not hasattr(torch, "_grouped_mm"):
            pytest.skip("torch._grouped_mm needs sm_90+")
        output = torch._grouped_mm(a, weights, offs=offsets, out_dtype=torch.bfloat16)
    else:
        before = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
        try:
            output = torch.empty(a.shape[0], weights.shape[2], device=a.device, dtype=torch.bfloat16)
            start = 0
            for g, end in enumerate(offsets.tolist()):
                if end > start:
                    torch.matmul(a[start:end], weights[g], out=output[start:end])
                start = end
        finally:
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = before
    ok, message = ref.check_implementation((a, weights, offsets), output)
    assert ok, message
