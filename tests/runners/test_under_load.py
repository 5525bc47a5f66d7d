"""scripts/under_load.py: busy processes pinned to every core for the command's life, gone after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "under_load.py"

SIBLINGS = """
import os
parent = os.getppid()
pids = []
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) != os.getpid():
        try:
            status = open(f"/proc/{entry}/status").read()
        except OSError:
            continue
        if f"\\nPPid:\\t{parent}\\n" in status:
            pids.append(entry)
print(" ".join(pids))
"""


def test_the_command_runs_beside_busy_processes_on_every_core_which_stop_after_it() -> None:
    cores = len(os.sched_getaffinity(0))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--per-core", "2", "--", sys.executable, "-c", SIBLINGS],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    busy = done.stdout.split()
    assert len(busy) >= 2 * cores, done.stdout  # (the multiprocessing helper may be one more)
    assert f"{2 * cores} busy processes (2 on each of cores" in done.stderr
    assert not [pid for pid in busy if Path(f"/proc/{pid}").exists()]  # all stopped with the command


def test_the_commands_exit_status_is_kept_and_a_missing_command_is_refused() -> None:
    run = [sys.executable, str(SCRIPT), "--per-core", "1", "--"]
    assert subprocess.run([*run, "sh", "-c", "exit 3"], capture_output=True, timeout=60).returncode == 3
    assert subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, timeout=60).returncode == 2
