"""The suite's parallel run keeps an ``xdist_group``'s tests on one worker, in file order (``make test`` runs
``-n auto --dist loadgroup``). The bad-submission and cheat modules rely on it: their last test checks the runner
after all their cases, and reads the cases' runs instead of repeating them (``tests/conftest.py`` says why the
grouping needs help under pytest 9.2)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("i", range(8))
def test_case(i):
    pass


def test_after_the_cases():
    pass
"""

SPREAD = """
import time

import pytest


@pytest.mark.parametrize("i", range(8))
def test_alone(i):
    time.sleep(0.2)
"""


def test_a_groups_tests_run_on_one_worker_in_file_order_and_the_rest_spread(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_spread.py").write_text(SPREAD)
    # The suite's root conftest as a plugin (what the suite's run loads), on a project of its own.
    argv = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-n", "2"]
    argv += ["--dist", "loadgroup", "-v", "-c", "/dev/null", "--rootdir", str(tmp_path), str(tmp_path)]
    done = subprocess.run(
        argv, cwd=tmp_path, env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"}, capture_output=True,
        text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = re.findall(r"^\[(gw\d)\] .*?PASSED \S*::(test_\w+)(\[\d+\])?", done.stdout, re.MULTILINE)
    grouped = [(worker, name + index) for worker, name, index in ran if name != "test_alone"]
    assert len(grouped) == 9, done.stdout[-3000:]
    assert len({worker for worker, _ in grouped}) == 1, grouped
    assert [name for _, name in grouped] == [f"test_case[{i}]" for i in range(8)] + ["test_after_the_cases"]
    spread = {worker for worker, name, _ in ran if name == "test_alone"}
    assert spread == {"gw0", "gw1"}, ran
