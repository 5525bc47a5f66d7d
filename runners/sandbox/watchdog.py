"""The watchdog of a sandboxed run: it polls the process until it ends or breaks a limit (time, output, tasks,
memory where no cgroup enforces it, disk and file count), and kills the whole process tree at the end."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from runners.sandbox.cgroups import RunCgroups
from runners.sandbox.output import Pump
from runners.sandbox.spec import MIB, SandboxSpec


@dataclass
class Watch:
    """What the watchdog saw; turned into a ProcessOutcome at the end."""

    reason: str = ""
    timed_out: bool = False
    out_of_memory: bool = False
    too_many_processes: bool = False
    output_limit_exceeded: bool = False
    disk_limit_exceeded: bool = False
    cancelled: bool = False
    peak_bytes: int = 0
    notes: list[str] = field(default_factory=list)


def watch_until_done(
    proc: subprocess.Popen[bytes],
    spec: SandboxSpec,
    workdir: Path,
    cgroups: RunCgroups,
    pump: Pump,
    watch: Watch,
    start: float,
) -> None:
    """Poll until the process ends or breaks a limit; on a breach record why and return (the caller kills)."""
    import psutil

    try:
        root = psutil.Process(proc.pid)
    except psutil.Error:
        root = None
    memory_limit = spec.memory_mb * MIB
    next_disk = start + 0.5
    interval = 0.02
    while True:
        try:
            proc.wait(timeout=interval)
            return
        except subprocess.TimeoutExpired:
            pass
        interval = min(interval * 1.5, 0.1)
        if spec.cancel is not None and spec.cancel.is_set():
            if proc.poll() is not None:
                return  # it ended on its own before the cancel: that end is what it did
            watch.cancelled = True
            watch.reason = "cancelled"
            return
        now = time.monotonic()
        since, limit, idle = spec.handover.limit(start) if spec.handover is not None else (start, spec.timeout_s, False)
        if now - since > limit:
            watch.timed_out = True
            watch.reason = (f"a pre-started process waited {limit:g} s for a job (its idle limit)" if idle
                            else f"time limit of {limit:g} s exceeded")  # fmt: skip
            return
        if pump.total > spec.max_output_bytes:
            watch.output_limit_exceeded = True
            watch.reason = f"printed more than {spec.max_output_bytes // MIB} MiB of output"
            return
        # Cheap kernel counters first; walking the process tree is the fallback (slow under a fork bomb).
        tree: list[object] | None = None
        if cgroups.tasks_limit_hit():
            watch.too_many_processes = True
            watch.reason = f"started more than {spec.max_tasks} processes and threads"
            return
        if cgroups.dirs:
            processes = len(cgroups.pids())
        else:
            tree = tree_of(root)
            processes = len(tree)
        # Without a pids cgroup, RLIMIT_NPROC (if any) lets the tree grow a little past max_tasks: trip there too.
        most = spec.max_processes if cgroups.limits_tasks else min(spec.max_processes, spec.max_tasks)
        if processes > most:
            watch.too_many_processes = True
            watch.reason = f"started more than {most} processes"
            return
        used = cgroups.memory_bytes()
        if used is None:
            used = resident_bytes(tree if tree is not None else tree_of(root))
            if used > memory_limit:
                watch.peak_bytes = max(watch.peak_bytes, used)
                watch.out_of_memory = True
                watch.reason = f"memory limit of {spec.memory_mb} MB exceeded"
                return
        watch.peak_bytes = max(watch.peak_bytes, used)
        if now >= next_disk:
            next_disk = now + 0.5
            if disk_usage(workdir, spec.disk_mb * MIB)[0] > spec.disk_mb * MIB:
                watch.disk_limit_exceeded = True
                watch.reason = f"wrote more than {spec.disk_mb} MB (or {MAX_FILES:,} files) to the job directory"
                return


def tree_of(root: object) -> list[object]:
    import psutil

    if root is None:
        return []
    try:
        return [root, *root.children(recursive=True)]  # type: ignore[attr-defined]
    except psutil.Error:
        return []


def resident_bytes(tree: list[object]) -> int:
    """Physical memory of a process tree: the sum of each process's proportional set size (PSS), so pages that
    forked children still share with their parent count once. Falls back to private RSS plus shared pages once."""
    import psutil

    total, fallback, shared = 0, 0, 0
    for p in tree:
        pss = pss_bytes(p.pid)  # type: ignore[attr-defined]
        if pss is not None:
            total += pss
            continue
        with contextlib.suppress(psutil.Error):
            info = p.memory_info()  # type: ignore[attr-defined]
            fallback += info.rss - getattr(info, "shared", 0)
            shared = max(shared, getattr(info, "shared", 0))
    return total + fallback + shared


def pss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


MAX_FILES = 100_000
"""Entries in a job directory past which the disk limit counts as exceeded: the watchdog walks the directory, and a
limit it could not finish counting would be no limit (many small files would outrun it)."""


def disk_usage(root: Path, stop_above: int) -> tuple[int, int]:
    """(bytes allocated under ``root``, size of the largest file); stops counting past ``stop_above``, and past
    :data:`MAX_FILES` entries reports more than ``stop_above`` (too many files is over the limit too)."""
    total, largest, stack, seen = 0, 0, [str(root)], 0
    while stack and total <= stop_above:
        if seen >= MAX_FILES:
            return stop_above + 1, largest
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as it:
            for entry in it:
                seen += 1
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        total += st.st_blocks * 512
                        largest = max(largest, st.st_size)
    return total, largest


def kill_tree(proc: subprocess.Popen[bytes], cgroups: RunCgroups) -> None:
    """SIGKILL the process and everything below it: the cgroup, the descendants (while ``init.py`` still holds
    them as subreaper), the process group, then ``init.py`` itself; reap it."""
    import psutil

    try:
        root = psutil.Process(proc.pid)
    except psutil.Error:
        root = None
    # init.py's own children first: under bubblewrap that takes the pid namespace down with it in one go.
    with contextlib.suppress(psutil.Error, AttributeError):
        for child in root.children():  # type: ignore[union-attr]
            child.kill()
    cgroups.kill_all()
    for _ in range(200):
        kids = tree_of(root)[1:]
        if not kids:
            break
        for kid in kids:
            with contextlib.suppress(psutil.Error):
                kid.kill()  # type: ignore[attr-defined]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):  # only a kernel problem keeps a SIGKILLed process
        proc.wait(timeout=10)


def user_task_count() -> int:
    import psutil

    uid, count = os.getuid(), 0
    for p in psutil.process_iter(["uids", "num_threads"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if p.info["uids"] and p.info["uids"].real == uid:
                count += p.info["num_threads"] or 1
    return count
