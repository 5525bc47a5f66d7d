"""Issue 16 on a real GPU: `kernelcup submit A B --compare` through the service, the queue and an in-process worker
with the local launcher (the real harness). A file compared with itself must come out as no difference (its interval
holds 1, the ratio within ±0.5% at the service's default rounds); a kernel that does three times the work must be
told apart from the original.

Marked ``gpu``: skipped without CUDA. The device name is ``KERNELCUP_TEST_DEVICE``, by default the row of the
peaks table that this machine's first GPU matches (H100, H200, ...: the worker refuses a job for another GPU).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import write_problem_set
from typer.testing import CliRunner

from kernelcup.cli import build_app

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]
TORCH = REPO / "problems" / "vectoradd" / "solutions" / "correct" / "pytorch.py"
THRICE = """import torch


def custom_kernel(data):
    a, b, out = data
    for _ in range(3):
        torch.add(a, b, out=out)
    return out
"""


@pytest.fixture
def board(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for var in ("DATABASE_URL", "KERNELCUP_DATABASE_URL", "KERNELCUP_ROUTES", "KERNELCUP_SERVER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KERNELCUP_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    device = os.environ.get("KERNELCUP_TEST_DEVICE") or _local_device()
    shutil.copytree(REPO / "problems" / "vectoradd", tmp_path / "problems" / "vectoradd")
    entries = [{"directory": "vectoradd", "deadline": "2099-01-01", "devices": [device]}]
    problem_set = write_problem_set(tmp_path / "problems", entries, name="gpu-compare")
    synced = CliRunner().invoke(build_app(), ["problems", "sync", "--skip-run", str(problem_set)])
    assert synced.exit_code == 0, synced.output
    return device


def _local_device() -> str:
    """The peaks table's name for this machine's first GPU (the lent machines were an H100, then an H200)."""
    from runners.devices import peaks_for
    from runners.gpus import list_gpus

    gpus = list_gpus()
    row = peaks_for(gpus[0].name) if gpus else None
    if row is None:
        pytest.skip(f"no GPU of the peaks table here ({gpus[0].name if gpus else 'none'}): set KERNELCUP_TEST_DEVICE")
    return row.name


def compare(a: Path, b: Path, device: str, rounds: int | None = None) -> dict:
    args = ["submit", str(a), str(b), "--compare", "-l", "vectoradd", "-d", device]
    args += ["--rounds", str(rounds)] if rounds else []
    done = CliRunner().invoke(build_app(), [*args, "--user", "gpu-test", "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)["status"]["comparison"]["result"]
    print(f"{a.name} vs {b.name}, {result['rounds']} rounds: {result['message']}")
    for c in result["cases"]:
        print(f"  {c['case']}: A {c['median_a_ns']:.0f} ns, B {c['median_b_ns']:.0f} ns, "
              f"A/B {c['ratio']:.4f} ({c['ci_low']:.4f} to {c['ci_high']:.4f})")  # fmt: skip
    return result


def test_a_file_compared_with_itself_shows_no_difference(board: str) -> None:
    result = compare(TORCH, TORCH, board)  # at most 14 rounds, fewer once the ratio is known within ±0.4%
    assert result["verdict"] == "accepted" and 6 <= result["rounds"] <= 14
    assert result["ci_low"] <= 1.0 <= result["ci_high"], result["message"]
    assert 0.995 < result["ratio"] < 1.005, result["message"]


def test_three_times_the_work_is_told_apart(board: str, tmp_path: Path) -> None:
    thrice = tmp_path / "thrice.py"
    thrice.write_text(THRICE)
    result = compare(thrice, TORCH, board, 4)
    assert result["verdict"] == "accepted"
    assert result["ci_low"] > 1.5, result["message"]  # the largest cases are bandwidth-bound: about 3x
    assert f"{TORCH.name} is faster by" in result["message"]
