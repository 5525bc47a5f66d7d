"""The bottleneck digest of a timed case (runners/provenance_digest.py): from the roofline share and the recorded
kernels only, the same result always reading the same, at most 2 KB."""

from __future__ import annotations

from runners.contract import BenchmarkResult, KernelMetrics, StallReason, Verdict
from runners.provenance import Launch, case_record
from runners.provenance_digest import MAX_DIGEST_CHARS, digest, same_kernel


def _bench(share: float | None, limit: str, launches: list[Launch], median: float) -> BenchmarkResult:
    return BenchmarkResult(index=0, case={}, verdict=Verdict.ACCEPTED, roofline_share=share, roofline_limit=limit,
                           kernels=case_record(launches, median, None))  # fmt: skip


def test_a_memory_bound_kernel_near_the_dram_bound() -> None:
    bench = _bench(0.81, "memory", [Launch("add_kernel", 9_900.0)], 10_000.0)
    assert digest(bench) == ("memory-bound: 81% of the DRAM bound, headroom <= 19% of the time; dominant kernel "
                             "add_kernel (own, 100% of the recorded time)")  # fmt: skip


def test_a_naive_matmul_far_from_the_tensor_peak_with_its_stall() -> None:
    name = "matmul_naive(const float *, const float *, float *, int)"
    bench = _bench(0.04, "fp32", [Launch(name, 5e6)], 5.1e6)
    stall = StallReason(reason="long_scoreboard", value=41.7, metric="smsp__average_warp_latency_issue_stalled_x")
    text = digest(bench, [KernelMetrics(name=name, top_stalls=[stall])])
    assert text == ("compute-bound: 4% of the fp32 peak, headroom up to 25.0x; dominant kernel matmul_naive (own, "
                    "100% of the recorded time); top stall long_scoreboard 41.7")  # fmt: skip
    assert digest(bench, [KernelMetrics(name=name, top_stalls=[stall])]) == text


def test_low_coverage_is_said_and_nothing_known_says_nothing() -> None:
    bench = _bench(None, "", [Launch("k", 1_000.0)], 10_000.0)
    assert digest(bench).endswith("the kernels explain only 10% of the timed call (launch overhead, or work the "
                                  "collector did not see)")  # fmt: skip
    assert digest(BenchmarkResult(index=0, case={}, verdict=Verdict.ACCEPTED)) == ""
    long = _bench(0.5, "memory", [Launch("x" * 5000, 1.0)], 1.0)
    assert len(digest(long)) <= MAX_DIGEST_CHARS


def test_the_stall_is_found_under_ncus_function_name_for_the_recorded_demangled_one() -> None:
    """Profile mode's ncu may name a kernel otherwise than the provenance pass's demangled signature (by its function
    alone, or with other parameter types): the digest pairs them (and never a kernel of another name)."""
    stall = StallReason(reason="lg_throttle", value=12.0, metric="smsp__average_warp_latency_issue_stalled_x")
    name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)"
    bench = _bench(0.6, "memory", [Launch(name, 900.0)], 1_000.0)
    assert digest(bench, [KernelMetrics(name="vectorized_elementwise_kernel", top_stalls=[stall])]).endswith(
        "top stall lg_throttle 12"
    )
    assert "top stall" not in digest(bench, [KernelMetrics(name="reduce_kernel", top_stalls=[stall])])
    assert same_kernel("matmul_naive(const float *, const float *, float *, int)", "matmul_naive")
    assert not same_kernel("", "x") and same_kernel("", "")
