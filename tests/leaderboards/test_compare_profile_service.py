"""A compare with ``profile`` through the service, the queue and a worker (issue 30), on SQLite and PostgreSQL: after
the rounds the worker profiles each case of both files and stores the comparison with its kernel metric deltas
(``runners.compare_profile``); a CPU device is refused; a runner that cannot profile leaves the ratio standing and
says why."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers import future, make_problem

from leaderboards.errors import InvalidSubmission
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Comparison, Mode, RunRequest, RunResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result
from runners.ncu import parse_raw_csv

FAST = WorkerSettings(
    _env_file=None, lease_s=5, heartbeat_s=0.1, poll_s=0.01, backoff_base_s=0, backoff_max_s=0, stop_grace_s=0.5
)
ANN = UserRef("ann")
FAST_PY = b"def custom_kernel(d):  # fast\n    return d\n"
SLOW_PY = b"def custom_kernel(d):  # slow\n    return d\n"
GEMM, ADD = parse_raw_csv(
    (Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "raw_page_h100_recorded.csv").read_text()
)  # recorded on the lent H100: a Triton GEMM and a PyTorch add


def respond(request: RunRequest) -> RunResult:
    """The fast file runs at 900 ns and profiles as the Triton GEMM; the other at 1000 ns, as the add."""
    fast = b"# fast" in request.submission.content
    if request.mode is Mode.PROFILE:
        return accepted_result(request).model_copy(update={"kernel_metrics": [GEMM if fast else ADD]})
    return accepted_result(request, 900.0 if fast else 1000.0)


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu", "H100"])
    return service


def _serve(svc: LeaderboardService, fake: FakeLauncher) -> None:
    asyncio.run(asyncio.wait_for(Worker(svc, lambda _device: fake, FAST).run(once=True), 60))


def _result(svc: LeaderboardService, submission_id: int) -> Comparison:
    status = svc.submission_status(submission_id)
    assert status.done and status.comparison is not None and status.comparison.result is not None
    return status.comparison.result


def test_after_the_rounds_each_case_of_both_files_is_profiled_and_the_deltas_stored(svc: LeaderboardService) -> None:
    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "H100", rounds=2, profile=True)
    fake = FakeLauncher(respond, remote_refs=False)
    _serve(svc, fake)
    timed = [r for r in fake.requests if r.mode is Mode.BENCHMARK]
    profiled = [r for r in fake.requests if r.mode is Mode.PROFILE]
    assert fake.requests == [*timed, *profiled] and len(timed) == 4  # the rounds first, then the profiles
    cases = timed[0].benchmarks
    assert [(r.submission.name, r.benchmarks) for r in profiled] == [
        (name, [case]) for case in cases for name in ("fast.py", "slow.py")]  # fmt: skip
    assert all(r.tests == [] and r.baselines == [] for r in profiled) and len({r.seed for r in profiled}) == 1
    result = _result(svc, receipt.submission_id)
    assert result.verdict is Verdict.ACCEPTED and result.ratio == pytest.approx(0.9)
    assert result.metrics is not None and result.metrics.collector == "ncu" and len(result.metrics.cases) == len(cases)
    row = result.metrics.cases[0].kernels[0]
    assert row.matched_by == "rank" and row.a is not None and row.a.name == "_matmul" and row.b is not None
    assert row.dram_pct == pytest.approx(33.73 - 73.52) and row.registers == 207 - 32
    events = [e.detail for e in svc.submission_status(receipt.submission_id).jobs[0].events if e.phase == "profiling"]
    assert events == [f"both files, case {k} of {len(cases)}" for k in range(1, len(cases) + 1)]
    plain = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY + b"#\n", "add", "H100", rounds=2)
    again = FakeLauncher(respond, remote_refs=False)
    _serve(svc, again)
    assert Mode.PROFILE not in [r.mode for r in again.requests] and _result(svc, plain.submission_id).metrics is None


def test_a_runner_that_cannot_profile_leaves_the_ratio_and_says_why(svc: LeaderboardService) -> None:
    def no_ncu(request: RunRequest) -> RunResult:
        if request.mode is Mode.PROFILE:
            return RunResult.infrastructure_error(Mode.PROFILE, "Nsight Compute crashed", fault="runner")
        return respond(request)

    receipt = svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "H100", rounds=2, profile=True)
    _serve(svc, FakeLauncher(no_ncu, remote_refs=False))
    result = _result(svc, receipt.submission_id)
    assert result.verdict is Verdict.ACCEPTED and result.ratio == pytest.approx(0.9)
    assert result.metrics is not None and result.metrics.collector == "none"
    assert result.metrics.note.startswith("fast.py: its profile run failed: infrastructure error (not your fault): ")
    assert "Nsight Compute crashed" in result.metrics.note


def test_a_compare_with_profile_needs_a_gpu_device(svc: LeaderboardService) -> None:
    with pytest.raises(InvalidSubmission, match="profiles GPU kernels; cpu is a CPU") as err:
        svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "cpu", rounds=2, profile=True)
    assert err.value.code == "profile_needs_gpu"


def test_the_profile_runs_count_against_the_pending_cap(svc: LeaderboardService) -> None:
    """Red team, 2026-11-28: a compare with profile makes 2 runs per round and 2 Nsight Compute runs per benchmark
    case (make_problem has 2), so with a cap of 6 runs, 2 rounds fit without profile (4) and not with it (8)."""
    svc.settings = svc.settings.model_copy(update={"max_pending_jobs_per_user": 6})
    with pytest.raises(InvalidSubmission, match=r"makes 4 runs \(2 per round\) and 4 profile runs") as err:
        svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "H100", rounds=2, profile=True)
    assert err.value.code == "too_many_rounds"
    assert "the 6 runs you may have waiting or running" in str(err.value)
    svc.compare(ANN, "fast.py", FAST_PY, "slow.py", SLOW_PY, "add", "H100", rounds=2)
