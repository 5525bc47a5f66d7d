"""A timed result's kernels on every surface: one line per case (its top kernels, their libraries and shares, the
coverage) and one line of what recorded them under which policy, on Discord, the CLI, its JSON summary and the web
page's filters."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.render import result_lines
from kernelcup.commands.run import render
from kernelcup.outcomes import _job_summary
from leaderboards.formatting import kernels_text, provenance_text
from runners.contract import BenchmarkResult, Mode, RunResult, TimingStats, Verdict
from runners.provenance import Launch, LibraryPolicy, Provenance, case_record
from web.pages.render import env

POLICY = LibraryPolicy(deny=["cublas", "cublaslt", "cudnn", "aten_mm"])


def _result() -> RunResult:
    record = case_record([Launch("_token", 1760.0, "(1, 1, 1)", "(128, 1, 1)"),
                          Launch("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", 181_664.0)], 185_000.0,
                         POLICY)  # fmt: skip
    stats = TimingStats(samples=20, median_ns=185_000.0, mean_ns=185_000.0, std_ns=10, stderr_ns=2, min_ns=184_000.0,
                        max_ns=186_000.0)  # fmt: skip
    bench = BenchmarkResult(index=0, case={"m": 4096}, verdict=Verdict.ACCEPTED, stats=stats, kernels=record,
                            digest="compute-bound: 60% of the fp16 tensor peak")  # fmt: skip
    prov = Provenance(collector="ncu", policy=POLICY.describe(), seconds=6.2)
    return RunResult(verdict=Verdict.REJECTED, mode=Mode.RANKED, benchmarks=[bench], provenance=prov,
                     message="benchmark 1: 99% of the time in nvjet_sm90_… (cuBLASLt), which this problem does not "
                     "allow")  # fmt: skip


LINE = "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_co… (cuBLASLt) 99% DENIED, _token (own) 1%; coverage 99%"
PROV = "kernels recorded by Nsight Compute in 6.2 s; library policy: denies cuBLAS, cuBLASLt, cuDNN, ATen matmul"


def test_the_shared_formatters() -> None:
    result = _result()
    assert kernels_text(result.benchmarks[0]) == LINE
    assert provenance_text(result) == PROV
    assert kernels_text(result.benchmarks[0].model_copy(update={"kernels": None})) == ""
    assert provenance_text(result.model_copy(update={"provenance": None})) == ""


def test_discord_shows_each_cases_kernels_in_a_code_span_and_the_collector() -> None:
    lines = result_lines(_result())
    assert f"  kernels: `{LINE}`" in lines and PROV in lines


def test_the_cli_json_summary_and_table(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    job = SimpleNamespace(device="H200", status="done", verdict=None, score_ns=None, rank=None, secret_passed=None,
                          error="")  # fmt: skip
    summary = _job_summary(job, _result())  # type: ignore[arg-type]
    assert summary["benchmarks"][0]["kernels"] == LINE and summary["provenance"] == PROV
    assert summary["benchmarks"][0]["digest"] == "compute-bound: 60% of the fp16 tensor peak"
    monkeypatch.setenv("COLUMNS", "240")
    render(_result(), "matmul_own", "decoy.py", "H200")
    text = capsys.readouterr().out
    assert f"kernels 1: {LINE}" in text and PROV in text and "digest 1: compute-bound: 60%" in text


def test_the_web_pages_filters() -> None:
    result = _result()
    html = env.from_string("{{ b | kernels(5) }}|{{ r | provenance }}").render(b=result.benchmarks[0], r=result)
    assert html == f"{LINE}|{PROV}"
