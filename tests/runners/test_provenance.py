"""The library table and the provenance record (runners/provenance.py), on kernel names recorded on an H200
(tests/runners/fixtures/kernels_h200/, written by benchmarks/record_kernels.py: torch 2.11 + CUDA 13, Triton 3.6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from runners.ncu import parse_raw_csv
from runners.provenance import (
    DENIED_SHARE_LIMIT,
    GROUP_NAMES,
    MAX_LAUNCHES_RECORDED,
    Launch,
    LibraryPolicy,
    case_record,
    groups_of,
    library_of,
    parse_torch_tables,
    record,
    short_name,
    summary,
)

FIXTURES = Path(__file__).parent / "fixtures" / "kernels_h200"

EXPECTED = {
    "aten_add": ["aten"],
    "aten_copy": ["aten"],
    "aten_softmax": ["aten"],
    "aten_sum": ["aten"],
    "cublas_bmm": ["cublaslt"],
    "cublas_fp16_mm": ["cublaslt"],
    "cublas_fp32_mm": ["cublas"],
    "cublas_linear_bias": ["cublaslt"],
    "cudnn_conv2d": ["cudnn", "cudnn", "cudnn", "cudnn"],
    "decoy_token_plus_matmul": ["own", "cublaslt"],
    "sdpa_attention": ["cudnn"],
    "side_stream_mm": ["cublaslt"],
    "triton_mm": ["own"],
}
"""Each sample's kernels' libraries, in launch order (CUPTI's memsets are the runtime's and left out here)."""
MATMUL_POLICY = LibraryPolicy(deny=["cublas", "cublaslt", "cudnn", "aten_mm"])


def _ncu(name: str, suffix: str = "ncu.csv") -> list[Launch]:
    metrics = parse_raw_csv((FIXTURES / f"{name}.{suffix}").read_text())
    return [Launch(m.name, m.duration_ns, m.grid, m.block) for m in metrics]


def _cupti(name: str) -> list[Launch]:
    return [Launch(n, float(ns)) for n, ns, _kind in json.loads((FIXTURES / f"{name}.cupti.json").read_text())]


@pytest.mark.parametrize("sample", sorted(EXPECTED))
@pytest.mark.parametrize("source", ["ncu.csv", "ncu-mangled.csv", "cupti.json"])
def test_every_recorded_kernel_is_classified(sample: str, source: str) -> None:
    launches = _cupti(sample) if source == "cupti.json" else _ncu(sample, source)
    libraries = [library_of(x.name) for x in launches if library_of(x.name) != "runtime"]
    assert libraries == EXPECTED[sample], [x.name[:80] for x in launches]


def test_cublas_ships_cutlass_named_kernels_that_are_not_the_submissions_cutlass() -> None:
    (sgemm,) = _ncu("cublas_fp32_mm")
    assert "cutlass" in sgemm.name and groups_of(sgemm.name) == ("cublas",)
    own = "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int>>>(T1::Params)"
    assert groups_of(own) == ("cutlass",)


def test_cudnn_attention_belongs_to_both_groups_and_runtime_memsets_are_their_own() -> None:
    (sdpa,) = _ncu("sdpa_attention")
    assert groups_of(sdpa.name) == ("cudnn", "attention")
    assert LibraryPolicy(deny=["attention"]).denies(groups_of(sdpa.name))
    assert groups_of("Memset (Device)") == ("runtime",)
    assert groups_of("triton_poi_fused_add_0") == ("inductor",)
    assert groups_of("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096>)") == ("nccl",)


def test_the_decoy_is_rejected_naming_the_share() -> None:
    case = case_record(_ncu("decoy_token_plus_matmul"), 185_000.0, MATMUL_POLICY)
    assert case.denied_share > 0.95 and case.kernels[0].denied and not case.kernels[1].denied
    assert 0.95 < (case.coverage or 0) < 1.0
    cases, violations, _ = record([Launch("spin_kernel", 900.0), *_ncu("decoy_token_plus_matmul")], [185_000.0],
                                  MATMUL_POLICY)  # fmt: skip
    assert cases[0] is not None and cases[0].recorded_ns == pytest.approx(1760 + 181664)
    (message,) = violations
    assert message.startswith("benchmark 1: 99% of the time in nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT "
                              "(cuBLASLt), which this problem does not allow")  # fmt: skip


@pytest.mark.parametrize("sample", ["triton_mm", "aten_add", "aten_copy"])
def test_own_and_aten_kernels_pass_the_matmul_policy(sample: str) -> None:
    _, violations, note = record([Launch("at::cuda::<unnamed>::spin_kernel(long)", 800.0), *_ncu(sample)],
                                 [sum(x.duration_ns or 0 for x in _ncu(sample)) * 1.02], MATMUL_POLICY)  # fmt: skip
    assert violations == [] and note == ""


def test_cases_are_cut_at_markers_and_a_forged_marker_falls_back_to_one_record() -> None:
    mark = Launch("at::cuda::<unnamed>::spin_kernel(long)", 700.0)
    launches = [mark, *_ncu("triton_mm"), mark, *_ncu("cublas_fp16_mm")]
    cases, violations, _ = record(launches, [220_000.0, 185_000.0], MATMUL_POLICY)
    assert [c.kernels[0].library for c in cases if c] == ["own", "cublaslt"]
    assert len(violations) == 1 and violations[0].startswith("benchmark 2: ")
    cases, violations, note = record([*launches, mark], [220_000.0, 185_000.0], MATMUL_POLICY)
    assert cases[1] is None and "could not be cut" in note and violations


def test_coverage_outside_its_bounds_is_a_violation_under_a_policy_and_a_flag_without() -> None:
    mark = Launch("spin_kernel", 700.0)
    _, violations, note = record([mark, *_ncu("triton_mm")], [217_408.0 * 20], MATMUL_POLICY)
    assert "explain only 5%" in violations[0] and "under 80%" in note
    _, violations, _ = record([mark, *_ncu("triton_mm")], [217_408.0 / 3], MATMUL_POLICY)
    assert "3.0x its timed time" in violations[0]
    _, violations, note = record([mark, *_ncu("triton_mm")], [217_408.0 * 20], None)
    assert violations == [] and "under 80%" in note
    _, violations, _ = record([mark], [1000.0], MATMUL_POLICY)
    assert "no kernel was recorded" in violations[0]


def test_the_policy_band_is_tight_enough_that_hidden_or_slower_work_does_not_pass() -> None:
    """Red team, 2026-11-28: at 0.5-2x, a call could hide half its work from the collector, or be timed with a
    library and recorded running a kernel of its own twice as slow."""
    mark = Launch("spin_kernel", 700.0)
    recorded = 217_408.0
    assert record([mark, *_ncu("triton_mm")], [recorded * 0.97], MATMUL_POLICY)[1] == []  # honest: within a few %
    assert record([mark, *_ncu("triton_mm")], [recorded / 0.85], MATMUL_POLICY)[1] == []  # gaps the sum leaves out
    _, hidden, _ = record([mark, *_ncu("triton_mm")], [recorded / 0.7], MATMUL_POLICY)
    assert "explain only 70%" in hidden[0]
    _, slower, _ = record([mark, *_ncu("triton_mm")], [recorded / 1.4], MATMUL_POLICY)
    assert "1.4x its timed time" in slower[0]


def test_a_record_cut_off_at_the_collectors_cap_cannot_check_a_policy() -> None:
    launches = [Launch("spin_kernel", 700.0), *[Launch("_own", 1000.0)] * (MAX_LAUNCHES_RECORDED - 1)]
    _, violations, note = record(launches, [(MAX_LAUNCHES_RECORDED - 1) * 1000.0], MATMUL_POLICY)
    assert any(f"{MAX_LAUNCHES_RECORDED} kernels or more" in v for v in violations)
    assert "later ones are not recorded" in note
    assert record(launches, [(MAX_LAUNCHES_RECORDED - 1) * 1000.0], None)[1] == []  # no policy: a note only


def test_no_record_under_a_policy_cannot_check_it() -> None:
    cases, violations, note = record(None, [1.0, 2.0], MATMUL_POLICY, note="Nsight Compute (ncu) is not installed")
    assert cases == [None, None] and note.startswith("Nsight Compute")
    assert violations == ["the library policy could not be checked: Nsight Compute (ncu) is not installed"]
    assert record(None, [1.0], None)[1] == []


def test_a_small_denied_share_passes() -> None:
    big = Launch("_mm", 1_000_000.0)
    small = Launch("nvjet_sm90_x", 1_000_000.0 * DENIED_SHARE_LIMIT * 0.9)
    assert record([Launch("spin_kernel", 1.0), big, small], [1_100_000.0], MATMUL_POLICY)[1] == []


def test_rows_are_folded_and_bounded() -> None:
    launches = [Launch(f"k{i % 40}", 10.0 + i % 40, "(1, 1, 1)", "(32, 1, 1)") for i in range(200)]
    case = case_record(launches, None, None)
    assert len(case.kernels) == 16 and case.kernels[0].name == "k39" and case.kernels[0].launches == 5
    assert case.other_launches == 24 * 5
    assert case.recorded_ns == pytest.approx(sum(x.duration_ns or 0 for x in launches))
    assert len(case.model_dump_json()) < 4096


def test_policy_validation_names_the_unknown_group_and_the_groups() -> None:
    with pytest.raises(ValidationError, match=r"unknown kernel group\(s\) 'cublass'.*cudnn, cublaslt, cublas"):
        LibraryPolicy(deny=["cublass"])
    with pytest.raises(ValidationError, match="one of deny"):
        LibraryPolicy(deny=["cublas"], allow=["own"])
    with pytest.raises(ValidationError, match="one of deny"):
        LibraryPolicy()
    allow = LibraryPolicy(allow=["own", "aten"])
    assert allow.denies(("cublaslt",)) and not allow.denies(("aten",)) and "own" in GROUP_NAMES
    assert allow.describe() == "allows only own, ATen"


def test_short_names_and_summary_fit_a_line() -> None:
    (conv, *_rest) = _ncu("cudnn_conv2d")
    assert short_name(conv.name, 64) == "cudnn::nchwToNhwcKernel<__half, __half, float, 0, 1, 0>"
    assert short_name(conv.name) == "cudnn::nchwToNhwcKernel<__half, __half, float, …"
    case = case_record(_ncu("decoy_token_plus_matmul"), 185_000.0, MATMUL_POLICY)
    line = summary(case)
    assert line.startswith("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_co… (cuBLASLt) 99% DENIED, _token (own) 1%")
    assert line.endswith("coverage 99%")


TORCH_TABLE = (FIXTURES.parent / "torch_table.txt").read_text()
"""Profile mode's torch profiler table (``key_averages().table()``) in its layout, written by hand for this test
(the recorded torch names are the fixtures' .cupti.json), with a '{i}' for the case."""


def test_the_torch_profilers_tables_give_each_cases_gpu_operations_per_call() -> None:
    text = "\n\n".join(TORCH_TABLE.format(i=i) for i in (1, 2))
    parts = parse_torch_tables(text, 2)
    assert parts is not None and [[(x.name, x.duration_ns) for x in p] for p in parts] == [
        [("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", pytest.approx(538_000 / 3)),
         ("Memset (Device)", pytest.approx(1000.0))]] * 2  # fmt: skip
    assert parse_torch_tables(text, 3) is None and parse_torch_tables("no tables", 1) is None
    cases, violations, _ = record(None, [180_000.0, 180_000.0], None, parts=parts)
    assert cases[0] is not None and cases[0].kernels[0].library == "cublaslt" and violations == []
