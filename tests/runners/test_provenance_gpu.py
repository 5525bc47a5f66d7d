"""Issue 30 on a real GPU with Nsight Compute: problems/matmul_own's library policy in ranked runs
(benchmarks/provenance_proof.py prints the same with each case's kernels and the pass's cost).

Marked ``gpu``: skipped without CUDA; skipped too where this runner cannot record kernels (no ncu, counters
restricted), which a problem with a policy then refuses (tested on the CPU in test_provenance_entry.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runners.contract import Mode, Verdict
from runners.entry.profiling import cannot_record_kernels
from runners.settings import RunnerSettings

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import provenance_proof as proof  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("file", proof.FILES, ids=[Path(f).stem for f in proof.FILES])
def test_matmul_own_gets_its_timed_verdict_from_the_kernels_it_ran(file: str) -> None:
    why = cannot_record_kernels(RunnerSettings())
    if why:
        pytest.skip(f"this runner cannot record kernels: {why}")
    path = proof.PROBLEM / file
    result = proof.evaluate(path, Mode.RANKED, sandbox=True, baselines=False, verbose=False)
    assert proof.check(path, result, proof.expected(path), coverage=0.95) == [], result.message
    if result.verdict is Verdict.REJECTED:
        assert result.rejection == "library_policy" and result.score_ns is None
    assert result.provenance is not None and result.provenance.seconds is not None
