"""The suite's parallel run keeps an ``xdist_group``'s tests on one worker, in file order (``make test`` runs
``-n auto --dist loadgroup``). The bad-submission and cheat modules rely on it: their last test checks the runner
after all their cases, and reads the cases' runs instead of repeating them (``tests/conftest.py`` says why the
grouping needs help under pytest 9.2). The tests of a module that share a module-scoped fixture are grouped too, so
that the fixture (a served site, a browser) is set up once, not once per worker."""

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

SHARED = """
import os
import time

import pytest


@pytest.fixture(scope="module")
def site():
    with open(os.environ["SETUPS"], "a") as f:
        f.write("set up\\n")
    return "site"


@pytest.mark.parametrize("i", range(6))
def test_shares(i, site):
    time.sleep(0.2)
    assert site == "site"
"""


def test_a_groups_tests_run_on_one_worker_in_file_order_and_the_rest_spread(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_spread.py").write_text(SPREAD)
    (tmp_path / "test_shared.py").write_text(SHARED)
    setups = tmp_path / "setups.txt"
    # The suite's root conftest as a plugin (what the suite's run loads), on a project of its own.
    argv = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-n", "2"]
    argv += ["--dist", "loadgroup", "-v", "-c", "/dev/null", "--rootdir", str(tmp_path), str(tmp_path)]
    done = subprocess.run(
        argv, cwd=tmp_path, env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin", "SETUPS": str(setups)},
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = re.findall(r"^\[(gw\d)\] .*?PASSED \S*::(test_\w+)(\[\d+\])?", done.stdout, re.MULTILINE)
    grouped = [(worker, name + index) for worker, name, index in ran if name in ("test_case", "test_after_the_cases")]
    assert len(grouped) == 9, done.stdout[-3000:]
    assert len({worker for worker, _ in grouped}) == 1, grouped
    assert [name for _, name in grouped] == [f"test_case[{i}]" for i in range(8)] + ["test_after_the_cases"]
    spread = {worker for worker, name, _ in ran if name == "test_alone"}
    assert spread == {"gw0", "gw1"}, ran
    shared = {worker for worker, name, _ in ran if name == "test_shares"}
    assert len(shared) == 1 and len([n for _, n, _ in ran if n == "test_shares"]) == 6, ran
    assert setups.read_text() == "set up\n"  # the module's fixture, once
