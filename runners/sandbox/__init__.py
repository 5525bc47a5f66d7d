"""Run one untrusted process: scrubbed environment, no network, only its job directory writable, bounded in
time, memory, tasks, disk and output. The harness (runners/harness/) starts the evaluation process through
:func:`run_sandboxed`; docs/sandbox.md explains every layer and docs/anti-cheat.md the threats it answers.

Layers, outermost first:

1. ``init.py`` (a tiny stdlib-only process we start instead of ``preexec_fn``): joins the run's cgroups, sets
   rlimits (core 0, file size, and ``RLIMIT_NPROC`` where no pids cgroup exists), becomes a child subreaper so
   that double-forked grandchildren come back to it, and kills whatever is left when the command ends.
2. bubblewrap (``bwrap``) on Linux where it can run: new network, pid, ipc and uts namespaces, dropped
   capabilities, read-only system paths, the job directory the only writable place, GPU device nodes.
3. This process: reads stdout/stderr continuously (keeps the first bytes, counts the rest), and a watchdog that
   enforces the wall-time limit, the memory limit where no cgroup does, the task, output and disk limits, and
   kills the whole tree when one is exceeded.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runners.sandbox.cgroups import RunCgroups, create_run_cgroups
from runners.sandbox.output import Pump, Stream
from runners.sandbox.view import (
    ALLOW_UNSANDBOXED_SETTING,
    probe_sandbox,
    python_ro_paths,
    sandbox_argv,
    scrubbed_env,
    toolchain_ro_paths,
)

__all__ = [
    "ALLOW_UNSANDBOXED_SETTING",
    "ProcessOutcome",
    "SandboxSpec",
    "SandboxUnavailable",
    "probe_sandbox",
    "python_ro_paths",
    "run_sandboxed",
    "scrubbed_env",
]


_INIT = Path(__file__).with_name("init.py")
_MIB = 1024 * 1024


class SandboxUnavailable(Exception):
    """The sandbox cannot run on this machine and the caller required it."""


@dataclass(frozen=True)
class SandboxSpec:
    """One process to run. ``env`` holds extra variables on top of a clean allowlist (see :func:`scrubbed_env`)."""

    argv: list[str]
    workdir: Path
    env: dict[str, str]
    timeout_s: float
    output_cap_bytes: int
    memory_mb: int
    pass_fds: tuple[int, ...] = ()
    ro_paths: tuple[Path, ...] = ()
    allow_gpu: bool = True
    require_sandbox: bool = False
    max_tasks: int = 1024
    """Processes + threads: the kernel's hard cap (pids cgroup, else ``RLIMIT_NPROC``)."""
    max_processes: int = 128
    """Processes (not threads) the watchdog allows, counting the sandbox's own two or three; a fork bomb of a
    process that has imported PyTorch forks slowly, so this trips long before ``max_tasks`` would."""
    disk_mb: int = 4096
    """Largest file (RLIMIT_FSIZE) and total size of the job directory (watchdog)."""
    max_output_bytes: int = 64 * _MIB
    """stdout + stderr past which the process is killed (``output_limit_exceeded``); only the cap is kept."""
    cancel: threading.Event | None = field(default=None, compare=False)
    """Set from another thread to kill the whole process tree at once (``cancelled`` in the outcome)."""


@dataclass(frozen=True)
class ProcessOutcome:
    returncode: int | None
    """Exit status; None when the process was ended by a signal."""
    signal: int | None
    timed_out: bool
    out_of_memory: bool
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    sandboxed: bool
    sandbox_note: str
    wall_time_s: float
    too_many_processes: bool = False
    output_limit_exceeded: bool = False
    disk_limit_exceeded: bool = False
    killed_reason: str = ""
    """The limit that ended the process, in words for the user ('' when it ended by itself)."""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    peak_memory_mb: float = 0.0
    cancelled: bool = False
    """The caller set ``SandboxSpec.cancel``: the tree was killed, nothing the process did is meaningful."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.killed_reason


# --------------------------------------------------------------------------------------------------------------
# Running


@dataclass
class _Watch:
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


def run_sandboxed(
    spec: SandboxSpec,
    on_stderr_line: Callable[[str], None] | None = None,
    on_start: Callable[[], None] | None = None,
) -> ProcessOutcome:
    """Run ``spec.argv`` in the sandbox and wait for it, never longer than ``spec.timeout_s`` (plus a moment to
    kill and reap). Never raises for anything the process does; raises :class:`SandboxUnavailable` only when
    ``spec.require_sandbox`` and bubblewrap cannot run, and ``ValueError`` for a malformed spec.

    ``on_stderr_line`` is called from a reader thread with each line of stderr (the first 8 MiB of it);
    ``on_start`` once the process exists (the caller may then close its copies of ``spec.pass_fds``)."""
    if not spec.argv:
        raise ValueError("SandboxSpec.argv is empty")
    workdir = Path(spec.workdir).resolve()
    if not workdir.is_dir():
        raise ValueError(f"SandboxSpec.workdir {workdir} is not a directory")
    env = scrubbed_env(workdir, spec.env)
    (workdir / "tmp").mkdir(exist_ok=True)

    if spec.allow_gpu:
        _ensure_nvidia_nodes()
    bwrap, hardened, note = probe_sandbox()
    if bwrap is None and spec.require_sandbox:
        raise SandboxUnavailable(
            f"refusing to run a submission without a sandbox: {note}. "
            f"Set {ALLOW_UNSANDBOXED_SETTING}=true to allow unsandboxed runs on a machine that runs only your own code."
        )
    notes = [note]
    argv = list(spec.argv)
    if bwrap is not None:
        ro = tuple(
            dict.fromkeys(
                [*python_ro_paths(), *toolchain_ro_paths(), *(Path(p).resolve() for p in spec.ro_paths)]
            )
        )
        missing = [str(p) for p in ro if not p.exists()]
        if missing:
            notes.append(f"read-only paths not found, not mounted: {', '.join(missing)}")
            ro = tuple(p for p in ro if p.exists())
        shm = min(spec.memory_mb * _MIB // 4, 1024 * _MIB)
        argv = [*sandbox_argv(bwrap, workdir, ro, spec.allow_gpu, hardened, shm), "--", *argv]

    memory_bytes = spec.memory_mb * _MIB
    cgroups = create_run_cgroups(memory_bytes, spec.max_tasks)
    rlimits = _rlimits(spec, cgroups, os.geteuid())
    notes.append(_limits_note(cgroups, rlimits))
    ready_r, ready_w = os.pipe()
    config = {
        "argv": argv,
        "cgroup_procs": cgroups.procs_files,
        "rlimits": rlimits,
        "parent_pid": os.getpid(),
        "ready_fd": ready_w,
    }
    unjoined: RunCgroups | None = None

    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pump: Pump | None = None
    watch = _Watch()
    start = time.monotonic()
    try:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_INIT), json.dumps(config)],
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                cwd=workdir,
                env=env,
                pass_fds=(*spec.pass_fds, ready_w),
                start_new_session=True,
            )
        except BaseException:
            os.close(ready_r)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
            os.close(ready_w)
        if on_start is not None:
            on_start()
        joined = _joined(ready_r)
        if cgroups.dirs and not joined:
            # The counters of cgroups the process is not in would read as "nothing running": watch the tree.
            unjoined, cgroups = cgroups, RunCgroups(notes=["could not join the run's cgroups; watching the tree"])
            notes.append(cgroups.notes[0])
        stdout = Stream(spec.output_cap_bytes, None)
        stderr = Stream(spec.output_cap_bytes, on_stderr_line)
        pump = Pump({out_r: stdout, err_r: stderr})
        try:
            _watch(proc, spec, workdir, cgroups, pump, watch, start)
        finally:
            _kill_tree(proc, cgroups)
        wall = time.monotonic() - start
        pump.finish(grace_s=2.0)
    except BaseException:
        if pump is None:
            for fd in (out_r, err_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
        else:
            pump.finish(grace_s=0.0)
        cgroups.remove()
        if unjoined is not None:
            unjoined.remove()
        raise
    killed = bool(watch.reason)
    fsize_limit = spec.disk_mb * _MIB
    if not killed and proc.returncode != 0 and _disk_usage(workdir, fsize_limit)[1] >= fsize_limit:
        # RLIMIT_FSIZE stopped a write (Python ignores SIGXFSZ, so the process saw EFBIG and failed by itself).
        watch.disk_limit_exceeded = True
        watch.reason = f"wrote a file of {spec.disk_mb} MB, the largest allowed"
    if cgroups.oom_kills() > 0:
        watch.out_of_memory = True
        watch.reason = watch.reason or f"memory limit of {spec.memory_mb} MB exceeded"
    cgroups.remove()
    if unjoined is not None:
        unjoined.remove()

    returncode, sig = _exit_status(proc.returncode, sandboxed=bwrap is not None, killed=killed)
    if sig == signal.SIGKILL and not watch.reason:
        watch.notes.append("killed by SIGKILL from outside the sandbox (possibly the system's out-of-memory killer)")
    return ProcessOutcome(
        returncode=returncode,
        signal=sig,
        timed_out=watch.timed_out,
        out_of_memory=watch.out_of_memory,
        stdout=stdout.text,
        stderr=stderr.text,
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        sandboxed=bwrap is not None,
        sandbox_note="; ".join(n for n in [*notes, *watch.notes] if n),
        wall_time_s=wall,
        too_many_processes=watch.too_many_processes,
        output_limit_exceeded=watch.output_limit_exceeded,
        disk_limit_exceeded=watch.disk_limit_exceeded,
        killed_reason=watch.reason,
        stdout_bytes=stdout.total,
        stderr_bytes=stderr.total,
        peak_memory_mb=round(watch.peak_bytes / _MIB, 1),
        cancelled=watch.cancelled,
    )


def _joined(ready_r: int) -> bool:
    """init.py's report: did it join the run's cgroups? (No answer within 10 s counts as no.) Closes ``ready_r``."""
    import select

    try:
        ready, _, _ = select.select([ready_r], [], [], 10.0)
        return bool(ready) and os.read(ready_r, 1) == b"J"
    except OSError:
        return False
    finally:
        os.close(ready_r)


def _ensure_nvidia_nodes() -> None:
    """Create /dev/nvidia-uvm (and friends) on the host if the driver has not yet: inside the sandbox CUDA cannot
    (its helper, the setuid nvidia-modprobe, finds a read-only /dev and no capabilities)."""
    if not os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia-uvm"):
        return
    modprobe = shutil.which("nvidia-modprobe")
    if modprobe is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run([modprobe, "-u", "-c=0"], capture_output=True, timeout=30, check=False)


def _rlimits(spec: SandboxSpec, cgroups: RunCgroups, euid: int) -> dict[str, int]:
    """The rlimits init.py sets before starting the command (never RLIMIT_AS: it breaks CUDA's initialisation)."""
    rlimits = {"RLIMIT_CORE": 0, "RLIMIT_FSIZE": spec.disk_mb * _MIB}
    if not cgroups.limits_tasks and euid != 0:
        # RLIMIT_NPROC counts every task of this user (root is exempt), so allow what already runs plus the budget.
        rlimits["RLIMIT_NPROC"] = _user_task_count() + spec.max_tasks + 16
    return rlimits


def _limits_note(cgroups: RunCgroups, rlimits: dict[str, int]) -> str:
    memory = "memory: cgroup" if cgroups.limits_memory else "memory: RSS watchdog"
    if cgroups.limits_tasks:
        tasks = "tasks: pids cgroup"
    elif "RLIMIT_NPROC" in rlimits:
        tasks = "tasks: RLIMIT_NPROC + watchdog"
    else:
        tasks = "tasks: watchdog"
    return ", ".join([memory, tasks, *cgroups.notes])


def _user_task_count() -> int:
    import psutil

    uid, count = os.getuid(), 0
    for p in psutil.process_iter(["uids", "num_threads"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if p.info["uids"] and p.info["uids"].real == uid:
                count += p.info["num_threads"] or 1
    return count


def _watch(
    proc: subprocess.Popen[bytes],
    spec: SandboxSpec,
    workdir: Path,
    cgroups: RunCgroups,
    pump: Pump,
    watch: _Watch,
    start: float,
) -> None:
    """Poll until the process ends or breaks a limit; on a breach record why and return (the caller kills)."""
    import psutil

    try:
        root = psutil.Process(proc.pid)
    except psutil.Error:
        root = None
    memory_limit = spec.memory_mb * _MIB
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
            watch.cancelled = True
            watch.reason = "cancelled"
            return
        now = time.monotonic()
        if now - start > spec.timeout_s:
            watch.timed_out = True
            watch.reason = f"time limit of {spec.timeout_s:g} s exceeded"
            return
        if pump.total > spec.max_output_bytes:
            watch.output_limit_exceeded = True
            watch.reason = f"printed more than {spec.max_output_bytes // _MIB} MiB of output"
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
            tree = _tree(root)
            processes = len(tree)
        # Without a pids cgroup, RLIMIT_NPROC (if any) lets the tree grow a little past max_tasks: trip there too.
        most = spec.max_processes if cgroups.limits_tasks else min(spec.max_processes, spec.max_tasks)
        if processes > most:
            watch.too_many_processes = True
            watch.reason = f"started more than {most} processes"
            return
        used = cgroups.memory_bytes()
        if used is None:
            used = _resident(tree if tree is not None else _tree(root))
            if used > memory_limit:
                watch.peak_bytes = max(watch.peak_bytes, used)
                watch.out_of_memory = True
                watch.reason = f"memory limit of {spec.memory_mb} MB exceeded"
                return
        watch.peak_bytes = max(watch.peak_bytes, used)
        if now >= next_disk:
            next_disk = now + 0.5
            if _disk_usage(workdir, spec.disk_mb * _MIB)[0] > spec.disk_mb * _MIB:
                watch.disk_limit_exceeded = True
                watch.reason = f"wrote more than {spec.disk_mb} MB (or {MAX_FILES:,} files) to the job directory"
                return


def _tree(root: object) -> list[object]:
    import psutil

    if root is None:
        return []
    try:
        return [root, *root.children(recursive=True)]  # type: ignore[attr-defined]
    except psutil.Error:
        return []


def _resident(tree: list[object]) -> int:
    """Physical memory of a process tree: the sum of each process's proportional set size (PSS), so pages that
    forked children still share with their parent count once. Falls back to private RSS plus shared pages once."""
    import psutil

    total, fallback, shared = 0, 0, 0
    for p in tree:
        pss = _pss(p.pid)  # type: ignore[attr-defined]
        if pss is not None:
            total += pss
            continue
        with contextlib.suppress(psutil.Error):
            info = p.memory_info()  # type: ignore[attr-defined]
            fallback += info.rss - getattr(info, "shared", 0)
            shared = max(shared, getattr(info, "shared", 0))
    return total + fallback + shared


def _pss(pid: int) -> int | None:
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


def _disk_usage(root: Path, stop_above: int) -> tuple[int, int]:
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


def _kill_tree(proc: subprocess.Popen[bytes], cgroups: RunCgroups) -> None:
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
        kids = _tree(root)[1:]
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


def _exit_status(rc: int | None, *, sandboxed: bool, killed: bool) -> tuple[int | None, int | None]:
    """(returncode, signal) of the submission's process from init.py's exit status."""
    if rc is None:
        return None, int(signal.SIGKILL)
    if rc < 0:
        return None, -rc
    if killed:
        return None, int(signal.SIGKILL)
    if sandboxed and 128 < rc < 128 + signal.NSIG:
        # bubblewrap reports a child ended by signal N as exit status 128 + N.
        return None, rc - 128
    return rc, None
