"""Zombies count as processes (issue 37, class 3): a run that forks children and never reaps them holds a pid for each;
the watchdog's process limit counts them (the pids cgroup's pids.current, or the tree in /proc), not only the live."""

from __future__ import annotations

import pytest

import runners.sandbox.run as sandbox_run
from runners.sandbox.cgroups import RunCgroups

ZOMBIES = """
import os, time
for _ in range(40):
    if os.fork() == 0:
        os._exit(0)
print('made zombies', flush=True)
time.sleep(20)
"""


def test_zombies_count_against_the_process_limit(run_py) -> None:
    out = run_py(ZOMBIES, max_processes=16, timeout_s=15)
    assert out.too_many_processes and not out.timed_out, out.stdout + out.stderr
    assert "16 processes" in out.killed_reason


def test_zombies_count_without_cgroups_too(run_py, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_run, "create_run_cgroups", lambda *_: RunCgroups())
    out = run_py(ZOMBIES, max_processes=16, timeout_s=15)
    assert out.too_many_processes and not out.timed_out, out.stdout + out.stderr


def test_children_reaped_at_once_are_not_zombies(run_py) -> None:
    out = run_py(
        "import os, time\nfor _ in range(60):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n"
        "    os.waitpid(pid, 0)\ntime.sleep(1.5)\nprint('ok')",
        max_processes=16,
    )
    assert out.returncode == 0 and out.stdout == "ok\n", out.killed_reason


def test_zombie_count_is_pids_current_less_the_live_threads(tmp_path) -> None:
    (tmp_path / "pids.current").write_text("45\n")
    (tmp_path / "tasks").write_text("\n".join(str(p) for p in range(100, 105)) + "\n")
    assert RunCgroups(dirs=[tmp_path], pids_dir=tmp_path).zombies() == 40
    assert RunCgroups().zombies() is None
