"""Bounds on the evaluation process: time, memory, tasks, output, disk; crashes reported; nothing left behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import runners.sandbox.run as sandbox_run
import runners.sandbox.watchdog as watchdog
from runners.sandbox import run_sandboxed
from runners.sandbox.cgroups import RunCgroups

# A helper that a submission's code can use to start a process that outlives it and keeps writing to a file:
# double fork + setsid, so it leaves the process group and is re-parented away from the submission.
HEARTBEAT = """
import os, sys, time
def daemon(path):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                with open(path, 'a') as f:
                    f.write('.')
                time.sleep(0.02)
        os._exit(0)
    os.wait()
"""


def _still_beating(path: Path) -> bool:
    before = path.stat().st_size if path.exists() else 0
    time.sleep(0.3)
    after = path.stat().st_size if path.exists() else 0
    return after != before


def test_cancel_kills_the_whole_tree_at_once(run_py, jobdir: Path) -> None:
    import threading

    beat = jobdir / "escaped"
    cancel = threading.Event()
    threading.Timer(0.8, cancel.set).start()
    start = time.monotonic()
    out = run_py(HEARTBEAT + f"daemon({str(beat)!r})\ntime.sleep(60)\n", timeout_s=30, cancel=cancel)
    elapsed = time.monotonic() - start
    assert out.cancelled and out.killed_reason == "cancelled" and not out.timed_out
    assert elapsed < 3, f"cancelling took {elapsed:.1f} s"
    assert beat.exists(), "the test's daemon never started"
    assert not _still_beating(beat), "a process of the cancelled run kept running"


def test_timeout_kills_the_whole_tree(run_py, jobdir: Path) -> None:
    beat, child_beat = jobdir / "escaped", jobdir / "child"
    (jobdir / "child.py").write_text(
        f"import time\nwhile True:\n    open({str(child_beat)!r}, 'a').write('.')\n    time.sleep(0.02)\n"
    )
    code = (
        HEARTBEAT
        + f"""
daemon({str(beat)!r})
import subprocess
subprocess.Popen([sys.executable, 'child.py'])
time.sleep(60)
"""
    )
    start = time.monotonic()
    out = run_py(code, timeout_s=1.5)
    elapsed = time.monotonic() - start
    assert out.timed_out and out.signal == signal.SIGKILL and out.returncode is None
    assert "time limit of 1.5 s" in out.killed_reason
    assert elapsed < 4
    assert beat.exists() and child_beat.exists(), "the test's processes never started"
    assert not _still_beating(beat), "a double-forked, setsid() grandchild survived the timeout"
    assert not _still_beating(child_beat), "a child process survived the timeout"


def test_grandchildren_killed_when_the_process_exits(run_py, jobdir: Path) -> None:
    beat = jobdir / "escaped"
    start = time.monotonic()
    out = run_py(HEARTBEAT + f"daemon({str(beat)!r})\ntime.sleep(0.2)\nprint('bye')", timeout_s=20)
    # The daemon kept stdout open; the run must still end at once, not at the time limit.
    assert time.monotonic() - start < 5
    assert out.returncode == 0 and out.stdout == "bye\n" and not out.timed_out
    assert beat.exists() and not _still_beating(beat)


def test_fork_bomb_is_contained(run_py, needs_hard_task_limit: None) -> None:
    start = time.monotonic()
    out = run_py(
        """
        import os, time
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
        """,
        max_tasks=64,
        timeout_s=8,
    )
    assert time.monotonic() - start < 8
    assert out.too_many_processes and not out.timed_out
    assert "processes" in out.killed_reason


def test_process_count_limit_below_the_task_cap(run_py) -> None:
    out = run_py("import os, time\nwhile True:\n    os.fork()\n    time.sleep(0.05)", max_processes=16, timeout_s=8)
    assert out.too_many_processes and not out.timed_out
    assert "16 processes" in out.killed_reason


def test_next_run_works_after_a_fork_bomb(run_py, needs_hard_task_limit: None) -> None:
    run_py("import os\nwhile True:\n    try: os.fork()\n    except OSError: pass", max_tasks=32, timeout_s=5)
    out = run_py("print('still alive')")
    assert out.returncode == 0 and out.stdout == "still alive\n"


def test_printing_gigabytes_is_capped_fast(run_py) -> None:
    start = time.monotonic()
    out = run_py(
        "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(4096): sys.stdout.buffer.write(chunk)",
        output_cap_bytes=1000,
        max_output_bytes=32 << 20,
        timeout_s=20,
    )
    assert time.monotonic() - start < 5
    assert out.output_limit_exceeded and out.stdout_truncated
    assert len(out.stdout) == 1000 and out.stdout_bytes > 32 << 20
    assert "MiB of output" in out.killed_reason


def test_output_below_the_kill_limit_is_counted_and_truncated(run_py) -> None:
    out = run_py(
        "import sys\nsys.stdout.write('a' * 3_000_000)\nsys.stderr.write('é' * 10 + 'b' * 100)",
        output_cap_bytes=16,
    )
    assert out.returncode == 0 and not out.killed_reason
    assert out.stdout == "a" * 16 and out.stdout_truncated and out.stdout_bytes == 3_000_000
    assert out.stderr == "é" * 8 and out.stderr_truncated  # cut on a byte boundary, decoded safely
    assert not out.output_limit_exceeded


MEMORY_HOG = """
import time
hog = []
for _ in range(400):
    hog.append(b'x' * (20 << 20))  # touched pages: 20 MiB a step, up to 8 GiB
    time.sleep(0.005)
print('survived')
"""


def test_memory_hog_is_killed_as_out_of_memory(run_py) -> None:
    start = time.monotonic()
    out = run_py(MEMORY_HOG, memory_mb=200, timeout_s=20)
    assert time.monotonic() - start < 10
    assert out.out_of_memory and not out.timed_out
    assert "survived" not in out.stdout
    assert "memory limit of 200 MB" in out.killed_reason


def test_memory_watchdog_without_cgroups(run_py, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_run, "create_run_cgroups", lambda *_: RunCgroups(notes=["test: no cgroups"]))
    out = run_py(MEMORY_HOG, memory_mb=200, timeout_s=20)
    assert out.out_of_memory and "survived" not in out.stdout
    assert "RSS watchdog" in out.sandbox_note


def test_fork_bomb_without_cgroups(run_py, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() == 0:
        pytest.skip("RLIMIT_NPROC does not bind root: only the watchdog would stop the bomb (unsafe here)")
    monkeypatch.setattr(sandbox_run, "create_run_cgroups", lambda *_: RunCgroups(notes=["test: no cgroups"]))
    out = run_py(
        "import os, time\nwhile True:\n    try: os.fork()\n    except OSError: time.sleep(0.01)",
        max_tasks=48,
        timeout_s=8,
    )
    assert out.too_many_processes and not out.timed_out
    assert run_py("print('ok')").stdout == "ok\n"


def test_cgroups_removed_after_the_run(run_py, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = sandbox_run.create_run_cgroups

    def spy(*args: int) -> RunCgroups:
        cgroups = real(*args)
        made.extend(cgroups.procs_files)
        return cgroups

    monkeypatch.setattr(sandbox_run, "create_run_cgroups", spy)
    run_py("import os\nos.fork()\nimport time\ntime.sleep(30)", timeout_s=0.5)
    if not made:
        pytest.skip("no cgroups can be created on this machine")
    assert all(not Path(p).parent.exists() for p in made)


def test_large_file_hits_the_disk_limit(run_py, jobdir: Path) -> None:
    out = run_py("f = open('big', 'wb')\nfor _ in range(64): f.write(b'x' * (1 << 20))\nf.flush()", disk_mb=8)
    assert out.disk_limit_exceeded and out.returncode == 1
    assert "File too large" in out.stderr and "8 MB" in out.killed_reason
    assert (jobdir / "big").stat().st_size <= 8 << 20


def test_many_small_files_hit_the_disk_limit(run_py) -> None:
    out = run_py(
        "import time\nfor i in range(10_000):\n    open(f'f{i}', 'wb').write(b'x' * (1 << 20))\ntime.sleep(5)",
        disk_mb=16,
        timeout_s=10,
    )
    assert out.disk_limit_exceeded and not out.timed_out


def test_too_many_empty_files_count_as_over_the_disk_limit(run_py, monkeypatch) -> None:
    # Empty files take no blocks: a watchdog that gave up counting would let a job fill the disk's inodes.
    monkeypatch.setattr(watchdog, "MAX_FILES", 2_000)
    out = run_py(
        "import os, time\nos.mkdir('d')\nfor i in range(5_000):\n    open(f'd/f{i}', 'wb').close()\ntime.sleep(5)",
        disk_mb=1024,
        timeout_s=10,
    )
    assert out.disk_limit_exceeded and "files" in out.killed_reason and not out.timed_out


def test_segfault_is_reported_with_its_signal(run_py) -> None:
    out = run_py("import ctypes\nctypes.string_at(0)")
    assert out.signal == signal.SIGSEGV and out.returncode is None
    assert not out.killed_reason and not out.timed_out and not out.out_of_memory


def test_abort_is_reported_with_its_signal(run_py) -> None:
    out = run_py("import os\nos.abort()")
    assert out.signal == signal.SIGABRT


@pytest.mark.parametrize("code, rc", [("import sys\nsys.exit(3)", 3), ("raise SystemExit(0)", 0), ("1/0", 1)])
def test_exit_status_passes_through(run_py, code: str, rc: int) -> None:
    out = run_py(code)
    assert out.returncode == rc and out.signal is None


def test_os_exit_zero_at_start_is_just_an_exit(run_py) -> None:
    out = run_py("import os\nprint('partial', end='')\nos._exit(0)")
    assert out.returncode == 0 and out.stdout == ""  # unflushed output is lost: the caller must not trust rc 0


def test_missing_program_is_reported(run_py) -> None:
    out = run_py("", argv=["/nonexistent/kernelcup-python"])
    assert out.returncode not in (0, None)
    assert "/nonexistent/kernelcup-python" in out.stderr


def test_parent_is_unharmed(run_py, sandboxed: None) -> None:
    """Signals the child sends do not reach the runner (own session, own pid namespace). Without the sandbox a
    process of the same user can signal the runner: one reason a worker serving others requires the sandbox."""
    out = run_py(
        f"import os, signal\ntry:\n    os.killpg({os.getpgrp()}, signal.SIGTERM)\nexcept OSError as e:\n    print(e)"
    )
    assert out.returncode == 0
    out = run_py(
        f"import os, signal\ntry:\n    os.kill({os.getpid()}, signal.SIGTERM)\nexcept OSError as e:\n    print(e)"
    )
    assert out.returncode == 0
    assert run_sandboxed is not None  # still here


def test_rlimits_reach_the_process(run_py) -> None:
    out = run_py(
        "import resource as r\nprint(*(r.getrlimit(x)[0] for x in (r.RLIMIT_CORE, r.RLIMIT_FSIZE, r.RLIMIT_AS)))",
        disk_mb=3,
    )
    core, fsize, address_space = (int(x) for x in out.stdout.split())
    assert core == 0 and fsize == 3 << 20
    assert address_space == -1, "RLIMIT_AS must stay unlimited (it breaks CUDA initialisation)"


def test_nproc_limit_only_without_a_pids_cgroup_and_not_for_root(jobdir: Path, spec_for) -> None:
    from runners.sandbox.run import _rlimits

    spec = spec_for("pass", max_tasks=100)
    with_pids = RunCgroups(pids_dir=jobdir)
    assert "RLIMIT_NPROC" not in _rlimits(spec, with_pids, euid=1000)
    assert "RLIMIT_NPROC" not in _rlimits(spec, RunCgroups(), euid=0)
    nproc = _rlimits(spec, RunCgroups(), euid=1000)["RLIMIT_NPROC"]
    assert 100 < nproc < 100 + 100_000  # this user's running tasks plus the run's budget


def test_cgroups_that_cannot_be_joined_fall_back_to_the_tree(
    run_py, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "fake-cgroup"
    (fake / "cgroup.procs").mkdir(parents=True)  # writing our pid there fails, as a cgroup without permission would
    monkeypatch.setattr(sandbox_run, "create_run_cgroups", lambda *_: RunCgroups(dirs=[fake], pids_dir=fake))
    out = run_py("import os, time\nwhile True:\n    os.fork()\n    time.sleep(0.05)", max_processes=16, timeout_s=8)
    assert "could not join" in out.stderr and "watching the tree" in out.sandbox_note
    assert out.too_many_processes and not out.timed_out


def test_killed_by_its_own_sigkill_is_reported_cleanly(run_py) -> None:
    out = run_py("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert out.signal == signal.SIGKILL and out.returncode is None and not out.killed_reason
    assert out.stderr == "", out.stderr  # nothing of the sandbox's own machinery leaks into the user's stderr
