"""The roofline share (issue 16): one table of device peaks, the bound per data type, computed in the trusted parent
from the evaluator's raw samples and work counts, and the operator's corrections (KERNELCUP_DEVICE_PEAKS)."""

from __future__ import annotations

import pytest

from runners.contract import DataType, Mode, RunRequest, RunResult, SubmissionFile, SystemInfo, Verdict
from runners.devices import MEMORY, PEAKS, check_overrides, peaks_for, roofline_bound, with_overrides
from runners.entry.session import Outcomes, Report
from runners.entry.verdict import build_result
from runners.ipc.protocol import RBench, RHello
from runners.settings import RunnerSettings

H100 = "NVIDIA H100 80GB HBM3"
M, K, N = 4096, 5120, 4096  # matmul's middle benchmark case
MATMUL_BYTES = 2 * (M * K + K * N + M * N)
MATMUL_FLOPS = 2 * M * N * K
CUBLAS_NS = 240_000.0  # what cuBLAS takes for it on an H100 SXM, about 715 TFLOP/s
VECTORADD_BYTES = 3 * 2 * 16384 * 16384  # vectoradd's largest case: 1.6 GB of fp16


def _result(
    gpu: str | None, work: list[tuple[int | None, int | None, float]], dtype: DataType = DataType.FP16, **kw: object
) -> RunResult:
    """What the trusted parent makes of an evaluator's report: one benchmark per (bytes, flops, median) on ``gpu``."""
    cases = [{"n": i, "seed": i} for i in range(len(work))]
    request = RunRequest(problem="p", lang="py", mode=Mode.BENCHMARK, files={}, dtype=dtype, benchmarks=cases,
                         submission=SubmissionFile(name="s.py", content=b"x"))  # fmt: skip
    report = Report(hello=RHello(gpu=gpu), done=True)
    report.benches = [
        RBench(index=i, verdict=Verdict.ACCEPTED, samples_ns=[median] * 5, bytes_moved=b, flops=f)
        for i, (b, f, median) in enumerate(work)
    ]
    return build_result(request, Outcomes(report, None, None), SystemInfo(), None, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["H100", "H200", "B200", "A100", "L40S", "L4", "A10G", "T4", "MI300X", "MI355X"])
def test_every_named_device_has_memory_fp32_and_fp16_peaks_and_a_source(name: str) -> None:
    row = next((r for r in PEAKS if r.name == name), None)
    assert row is not None, f"{name} is missing from runners/devices.py"
    assert row.memory_bytes_per_s > 1e11 and row.flops_per_s[DataType.FP32] > 1e12
    assert row.flops_per_s[DataType.FP16] > row.flops_per_s[DataType.FP32]  # tensor cores beat the CUDA cores
    assert all(isinstance(t, DataType) for t in row.flops_per_s)  # the keys task.yml's dtype may name
    assert "datasheet" in row.source


def test_the_h100_figures_are_the_dense_datasheet_ones() -> None:
    row = peaks_for(H100)
    assert row is not None and row.name == "H100"
    assert row.memory_bytes_per_s == 3.35e12
    assert row.flops_per_s == {
        DataType.FP32: 67e12, DataType.TF32: 494.7e12, DataType.FP16: 989.4e12, DataType.BF16: 989.4e12,
        DataType.FP8: 1978.9e12, DataType.INT8: 1978.9e12,
    }  # fmt: skip


def test_a_matmul_near_cublas_shows_a_high_share_of_the_fp16_tensor_roofline() -> None:
    result = _result(H100, [(MATMUL_BYTES, MATMUL_FLOPS, CUBLAS_NS)])
    [bench] = result.benchmarks
    assert bench.roofline_limit == "fp16 tensor"
    assert bench.roofline_ns == pytest.approx(MATMUL_FLOPS / 989.4e12 * 1e9)  # 174 µs
    assert bench.roofline_share == pytest.approx(0.72, abs=0.01)  # not the 15% that bandwidth alone gives
    assert MATMUL_BYTES / 3.35e12 * 1e9 / CUBLAS_NS < 0.15
    assert result.roofline_share == pytest.approx(bench.roofline_share)
    assert result.roofline is not None and result.roofline.device == "H100" and result.roofline.dtype == "fp16"
    assert result.roofline.flops_per_s == 989.4e12 and "H100 datasheet" in result.roofline.source
    assert result.verdict is Verdict.ACCEPTED


def test_a_bandwidth_bound_case_is_bounded_by_memory_and_the_run_share_is_the_geometric_mean() -> None:
    at_peak = VECTORADD_BYTES / 3.35e12 * 1e9  # 481 µs
    result = _result(H100, [(VECTORADD_BYTES, 16384 * 16384, at_peak / 0.9), (MATMUL_BYTES, MATMUL_FLOPS, CUBLAS_NS)])
    memory, compute = result.benchmarks
    assert memory.roofline_limit == MEMORY and memory.roofline_share == pytest.approx(0.9)
    assert compute.roofline_limit == "fp16 tensor"
    assert result.roofline_share == pytest.approx((0.9 * compute.roofline_share) ** 0.5)  # type: ignore[operator]


def test_without_a_declared_type_the_flops_are_bounded_by_the_fp32_cuda_cores() -> None:
    request = RunRequest.model_validate(
        {"problem": "p", "lang": "py", "mode": "test", "files": {}, "submission": {"name": "s.py", "content": ""}}
    )  # an older request, without the field, still parses
    assert request.dtype is DataType.FP32
    [bench] = _result(H100, [(1000, 10**9, 20_000.0)], DataType.FP32).benchmarks
    assert bench.roofline_limit == "fp32" and bench.roofline_ns == pytest.approx(1e9 / 67e12 * 1e9)


def test_a_type_the_device_has_no_units_for_is_bounded_by_memory_alone() -> None:
    result = _result("NVIDIA A100-SXM4-80GB", [(MATMUL_BYTES, MATMUL_FLOPS, CUBLAS_NS)], DataType.FP8)
    assert result.benchmarks[0].roofline_limit == MEMORY
    assert result.roofline is not None and result.roofline.flops_per_s is None


def test_no_share_on_the_cpu_an_unknown_gpu_or_without_work() -> None:
    for gpu in (None, "Some Future GPU"):
        result = _result(gpu, [(MATMUL_BYTES, MATMUL_FLOPS, CUBLAS_NS)])
        assert result.roofline_share is None and result.roofline is None
        assert result.benchmarks[0].roofline_ns is None and result.benchmarks[0].roofline_share is None
    result = _result(H100, [(MATMUL_BYTES, MATMUL_FLOPS, CUBLAS_NS), (None, None, 1000.0)])
    assert result.benchmarks[0].roofline_share is not None and result.benchmarks[1].roofline_share is None
    assert result.roofline_share is None  # not every case has one: no overall share


def test_a_stored_result_from_before_the_roofline_still_reads() -> None:
    old = RunResult.model_validate({"verdict": "accepted", "mode": "benchmark", "benchmarks": [
        {"index": 0, "case": {}, "verdict": "accepted", "bytes_moved": 10}]})  # fmt: skip
    assert old.roofline_share is None and old.roofline is None and old.benchmarks[0].roofline_share is None


def test_an_operator_corrects_a_row_or_adds_a_device() -> None:
    settings = RunnerSettings(_env_file=None, device_peaks={"h100": {"fp16": 700e12}, "RTX 4090": {MEMORY: 1.0e12}})
    table = settings.peaks_table()
    h100 = peaks_for(H100, table)
    assert h100 is not None and h100.flops_per_s[DataType.FP16] == 700e12 and h100.memory_bytes_per_s == 3.35e12
    assert h100.source.startswith("operator setting KERNELCUP_DEVICE_PEAKS (fp16)")
    added = peaks_for("NVIDIA GeForce RTX 4090", table)
    assert added is not None and added.name == "RTX 4090" and added.memory_bytes_per_s == 1e12
    datasheet = peaks_for(H100)
    assert datasheet is not None and datasheet.flops_per_s[DataType.FP16] == 989.4e12  # the table itself is unchanged
    result = _result(H100, [(MATMUL_BYTES, MATMUL_FLOPS, CUBLAS_NS)], peaks_table=table)
    assert result.benchmarks[0].roofline_share == pytest.approx(MATMUL_FLOPS / 700e12 * 1e9 / CUBLAS_NS)
    assert result.roofline is not None and result.roofline.source.startswith("operator setting")


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"H100": {"fp64": 60e12}}, "'fp64' is not a peak; use memory, fp32, tf32, fp16, bf16, fp8, int8, fp4"),
        ({"H100": {"memory": -1.0}}, "H100: memory must be a positive number"),
        ({"H100": {"fp16": float("inf")}}, "H100: fp16 must be a positive number"),
        ({"RTX 4090": {"fp16": 165e12}}, "RTX 4090 is not in the table (B200, H200"),
        ({"--": {"memory": 1e12}}, "'--' is not a device name"),
    ],
)
def test_bad_overrides_are_named(overrides: dict[str, dict[str, float]], says: str) -> None:
    with pytest.raises(ValueError) as exc:
        check_overrides(overrides)
    assert says in str(exc.value)
    with pytest.raises(ValueError):
        with_overrides(overrides)


def test_a_bad_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelcup.settings import SettingsError, load

    monkeypatch.setenv("KERNELCUP_DEVICE_PEAKS", '{"H100": {"fp17": 1e12}}')
    with pytest.raises(SettingsError, match=r"KERNELCUP_DEVICE_PEAKS is invalid: H100: 'fp17' is not a peak"):
        load(RunnerSettings)
    monkeypatch.setenv("KERNELCUP_DEVICE_PEAKS", '{"H100": {"memory": 3.0e12}}')
    assert load(RunnerSettings).device_peaks == {"H100": {"memory": 3.0e12}}


def test_the_bound_itself() -> None:
    row = peaks_for(H100)
    assert row is not None
    assert roofline_bound(None, None, row, DataType.FP16) is None
    assert roofline_bound(None, 10**9, row, DataType.FP4) is None  # only flops, and no fp4 units on an H100
    ns, limit = roofline_bound(3_350_000, None, row, DataType.FP16) or (0.0, "")
    assert ns == pytest.approx(1000.0) and limit == MEMORY
    ns, limit = roofline_bound(3_350_000, 2 * 989_400_000, row, DataType.FP16) or (0.0, "")
    assert ns == pytest.approx(2000.0) and limit == "fp16 tensor"  # the longer of the two


def test_a_gpu_name_picks_its_row_by_whole_model_words() -> None:
    """'L4' is not the L40 (a digit follows), 'A10' names the A10G row, an unknown model has no row."""
    from runners.devices import peaks_for

    names = {"NVIDIA L40": None, "NVIDIA L40S": "L40S", "NVIDIA L4": "L4", "NVIDIA A10G": "A10G",
             "NVIDIA H100 80GB HBM3": "H100", "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA GH200 480GB": None,
             "AMD Instinct MI300X": "MI300X", "Tesla T4": "T4"}  # fmt: skip
    for name, row in names.items():
        got = peaks_for(name)
        assert (got.name if got else None) == row, name
