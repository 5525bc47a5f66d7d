"""The CPU side of ``benchmarks/retime_gpu.py`` (the GPU proof of re-timing, issue 29): where its two workers go, and
the expectation that makes it exit non-zero. The GPU part runs on a GPU machine only (the script's docstring)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from leaderboards.retiming import MachineFigure, RetimedRow, RetimingView

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "retime_gpu.py"
WORKERS = ("retime-a-gpu0", "retime-b-gpu0")


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("retime_gpu", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def row(user: str, rank: int, tied: bool, sid: int) -> RetimedRow:
    machines = tuple(MachineFigure(f"{w} (torch 2.11.0)", 3, 64_000.0) for w in WORKERS)
    return RetimedRow(rank, tied, user, sid, 64_000.0, 63_000.0, 65_000.0, 6, machines)


def view(*rows: RetimedRow, done: int = 6, failed: tuple[int, ...] = ()) -> RetimingView:
    return RetimingView("vectoradd", "H200", "b1", 6, done, 2, rows, failed)


def test_two_workers_one_per_gpu_or_both_on_the_only_one(script: ModuleType) -> None:
    assert [(p.worker_id, p.gpu_index) for p in script.plan_workers([0, 1, 2])] == [("retime-gpu0", 0),
                                                                                     ("retime-gpu1", 1)]  # fmt: skip
    assert [(p.worker_id, p.gpu_index) for p in script.plan_workers([3])] == [("retime-a-gpu3", 3),
                                                                              ("retime-b-gpu3", 3)]  # fmt: skip
    with pytest.raises(ValueError, match="no GPU of the device here"):
        script.plan_workers([])


def test_the_expectation_holds_only_for_a_tie_of_the_identical_files_and_the_slow_one_after(script: ModuleType) -> None:
    good = view(row("bob", 1, True, 2), row("alice", 1, True, 1), row("carol", 3, False, 3))
    assert script.expectation_failures(good, 6, WORKERS) == []

    apart = view(row("alice", 1, False, 1), row("bob", 2, False, 2), row("carol", 3, False, 3))
    assert script.expectation_failures(apart, 6, WORKERS) == ["the identical files are not tied: alice #1, bob #2"]
    slow_first = view(row("carol", 1, True, 3), row("alice", 1, True, 1), row("bob", 1, True, 2))
    [failure] = script.expectation_failures(slow_first, 6, WORKERS)
    assert failure.startswith("three times the work is not ranked after the identical files")
    short = view(row("alice", 1, True, 1), row("bob", 1, True, 2), done=4, failed=(3,))
    assert script.expectation_failures(short, 6, WORKERS) == [
        "4 of 6 rounds ran (the others failed or did not finish in time)",
        "a run failed in some round for submission(s) #3",
        "not ranked in the re-timing: carol",
    ]
    assert script.expectation_failures(good, 6, (*WORKERS, "retime-c-gpu0")) == [
        "no round ran on retime-c-gpu0: the rounds were not spread over both workers"
    ]


def test_help_runs_without_a_gpu() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--rounds" in done.stdout and "--out" in done.stdout
