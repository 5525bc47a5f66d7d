"""Running one process in the sandbox: :func:`run_sandboxed`, in its steps (the command line, the start through
``init.py``, the watchdog, the outcome)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runners.sandbox.cgroups import RunCgroups, create_run_cgroups
from runners.sandbox.output import Pump, Stream
from runners.sandbox.spec import MIB, ProcessOutcome, SandboxSpec, SandboxUnavailable
from runners.sandbox.view import (
    ALLOW_UNSANDBOXED_SETTING,
    probe_sandbox,
    python_ro_paths,
    sandbox_argv,
    scrubbed_env,
    toolchain_ro_paths,
)
from runners.sandbox.watchdog import (
    LOW_HOST_DISK,
    Watch,
    disk_usage,
    host_free_bytes,
    kill_tree,
    user_task_count,
    watch_until_done,
)

_INIT = Path(__file__).with_name("init.py")


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
    (workdir / "tmp").mkdir(exist_ok=True)
    command = _command(spec, workdir)
    cgroups = create_run_cgroups(spec.memory_mb * MIB, spec.max_tasks)
    rlimits = _rlimits(spec, cgroups, os.geteuid())
    command.notes.append(_limits_note(cgroups, rlimits))
    run = _Run(spec, workdir, command, cgroups)
    try:
        run.start(rlimits, on_start)
        run.watch(on_stderr_line)
    except BaseException:
        run.abandon()
        raise
    return run.outcome()


@dataclass
class _Command:
    argv: list[str]
    sandboxed: bool
    notes: list[str]


def _command(spec: SandboxSpec, workdir: Path) -> _Command:
    """The command line: ``spec.argv`` under bubblewrap where it can run (else as is, unless the spec requires it)."""
    if spec.allow_gpu:
        ensure_nvidia_nodes()
    bwrap, hardened, note = probe_sandbox()
    if bwrap is None and spec.require_sandbox:
        raise SandboxUnavailable(
            f"refusing to run a submission without a sandbox: {note}. "
            f"Set {ALLOW_UNSANDBOXED_SETTING}=true to allow unsandboxed runs on a machine that runs only your own code."
        )
    notes = [note]
    if bwrap is None:
        return _Command(list(spec.argv), False, notes)
    ro = tuple(dict.fromkeys([*python_ro_paths(), *toolchain_ro_paths(), *(Path(p).resolve() for p in spec.ro_paths)]))
    missing = [str(p) for p in ro if not p.exists()]
    if missing:
        notes.append(f"read-only paths not found, not mounted: {', '.join(missing)}")
        ro = tuple(p for p in ro if p.exists())
    shm = min(spec.memory_mb * MIB // 4, 1024 * MIB)
    argv = sandbox_argv(bwrap, workdir, ro, spec.allow_gpu, hardened, shm, gpu_node=spec.gpu_node)
    return _Command([*argv, "--", *spec.argv], True, notes)


@dataclass
class _Run:
    """One process from its start through ``init.py`` to its outcome; owns its pipes and cgroups."""

    spec: SandboxSpec
    workdir: Path
    command: _Command
    cgroups: RunCgroups
    unjoined: RunCgroups | None = None
    proc: subprocess.Popen[bytes] | None = None
    pipes: dict[str, int] = field(default_factory=dict)
    pump: Pump | None = None
    streams: tuple[Stream, Stream] | None = None
    state: Watch = field(default_factory=Watch)
    started: float = 0.0
    wall_s: float = 0.0
    status_r: int = -1
    host_free_start: int | None = None
    """Free bytes on the job folder's disk when the run started: a disk that had room for the job's whole limit and
    filled during the run was filled by the run itself, by paths no count sees (held descriptors, renames), not the
    platform's failure."""

    def start(self, rlimits: dict[str, int], on_start: Callable[[], None] | None) -> None:
        """Start ``init.py`` (it joins the cgroups, sets the rlimits, then runs the command) with its output piped."""
        ready_r, ready_w = os.pipe()
        self.status_r, status_w = os.pipe()
        self.host_free_start = host_free_bytes(self.workdir)
        config = {
            "argv": self.command.argv,
            "cgroup_procs": self.cgroups.procs_files,
            "rlimits": rlimits,
            "parent_pid": os.getpid(),
            "ready_fd": ready_w,
            "status_fd": status_w,
        }
        self.pipes["out"], out_w = os.pipe()
        self.pipes["err"], err_w = os.pipe()
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_INIT), json.dumps(config)],
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                cwd=self.workdir,
                env=scrubbed_env(self.workdir, self.spec.env),
                pass_fds=(*self.spec.pass_fds, ready_w, status_w),
                start_new_session=True,
            )
        except BaseException:
            os.close(ready_r)
            raise
        finally:
            for fd in (out_w, err_w, ready_w, status_w):
                os.close(fd)
        if on_start is not None:
            on_start()
        joined = _joined(ready_r)
        if self.cgroups.dirs and not joined:
            # The counters of cgroups the process is not in would read as "nothing running": watch the tree.
            note = "could not join the run's cgroups; watching the tree"
            self.unjoined, self.cgroups = self.cgroups, RunCgroups(notes=[note])
            self.command.notes.append(note)

    def watch(self, on_stderr_line: Callable[[str], None] | None) -> None:
        """Pump the output and watch the limits until the process ends or breaks one; then kill the whole tree."""
        assert self.proc is not None
        stdout = Stream(self.spec.output_cap_bytes, None)
        stderr = Stream(self.spec.output_cap_bytes, on_stderr_line)
        self.streams = (stdout, stderr)
        self.pump = Pump({self.pipes.pop("out"): stdout, self.pipes.pop("err"): stderr})
        try:
            watch_until_done(self.proc, self.spec, self.workdir, self.cgroups, self.pump, self.state, self.started)
        finally:
            kill_tree(self.proc, self.cgroups)
        self.wall_s = time.monotonic() - self.started
        self.pump.finish(grace_s=2.0)

    def abandon(self) -> None:
        """Release everything after an error of our own (the process, if any, is already killed)."""
        self._init_status()
        for fd in self.pipes.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.pump is not None:
            self.pump.finish(grace_s=0.0)
        self._remove_cgroups()

    def _remove_cgroups(self) -> None:
        self.cgroups.remove()
        if self.unjoined is not None:
            self.unjoined.remove()

    def _init_status(self) -> str | None:
        """How init.py said its command ended (``exit N`` / ``signal N``), None if it said nothing (it was killed)."""
        if self.status_r < 0:
            return None
        try:
            os.set_blocking(self.status_r, False)
            return os.read(self.status_r, 64).decode(errors="replace") or None
        except OSError:
            return None
        finally:
            os.close(self.status_r)
            self.status_r = -1

    def outcome(self) -> ProcessOutcome:
        assert self.proc is not None and self.streams is not None
        spec, watch = self.spec, self.state
        killed = bool(watch.reason)
        limit = spec.disk_mb * MIB
        final = disk_usage(self.workdir, limit)
        watch.disk_bytes = max(watch.disk_bytes, final.bytes)
        if not killed and self.proc.returncode != 0 and final.largest >= limit:
            # RLIMIT_FSIZE stopped a write (Python ignores SIGXFSZ, so the process saw EFBIG and failed by itself).
            watch.disk_limit_exceeded = True
            watch.reason = f"wrote a file of {spec.disk_mb} MB, the largest allowed"
        platform = []
        oom_kills = self.cgroups.oom_kills()
        if oom_kills > 0 and self.cgroups.limit_reached():
            watch.out_of_memory = True
            watch.reason = watch.reason or f"memory limit of {spec.memory_mb} MB exceeded"
        elif oom_kills > 0:
            platform.append(
                f"the host's out-of-memory killer killed {oom_kills} of the run's processes while the run was below "
                f"its memory limit of {spec.memory_mb} MB (the machine ran out of memory)"
            )
        self._remove_cgroups()
        sandboxed = self.command.sandboxed
        returncode, sig = _exit_status(self.proc.returncode, sandboxed=sandboxed, killed=killed)
        status = self._init_status()
        if sig == signal.SIGKILL and not watch.reason and not platform:
            outside = _killed_outside(self.proc.returncode, status, sandboxed)
            if outside:
                platform.append(outside)
            else:
                watch.notes.append("killed by SIGKILL inside the sandbox (its own doing, or a kill no one can trace)")
        free = host_free_bytes(self.workdir)
        if free is not None:
            watch.host_free_min = free if watch.host_free_min is None else min(watch.host_free_min, free)
        short_from_the_start = self.host_free_start is None or self.host_free_start < limit + LOW_HOST_DISK
        if (
            not watch.disk_limit_exceeded
            and watch.disk_bytes <= limit
            and short_from_the_start
            and watch.host_free_min is not None
            and watch.host_free_min < LOW_HOST_DISK
        ):
            platform.append(
                f"the runner's disk was full ({watch.host_free_min // MIB} MB free) while the job had used "
                f"{watch.disk_bytes // MIB} MB of its {spec.disk_mb} MB limit"
            )
        stdout, stderr = self.streams
        return ProcessOutcome(
            returncode=returncode,
            signal=sig,
            timed_out=watch.timed_out,
            out_of_memory=watch.out_of_memory,
            stdout=stdout.text,
            stderr=stderr.text,
            stdout_truncated=stdout.truncated,
            stderr_truncated=stderr.truncated,
            sandboxed=sandboxed,
            sandbox_note="; ".join(n for n in [*self.command.notes, *watch.notes] if n),
            wall_time_s=self.wall_s,
            too_many_processes=watch.too_many_processes,
            output_limit_exceeded=watch.output_limit_exceeded,
            disk_limit_exceeded=watch.disk_limit_exceeded,
            killed_reason=watch.reason,
            stdout_bytes=stdout.total,
            stderr_bytes=stderr.total,
            peak_memory_mb=round(watch.peak_bytes / MIB, 1),
            cancelled=watch.cancelled,
            infrastructure_failure="; ".join(platform),
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


def ensure_nvidia_nodes() -> None:
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
    rlimits = {"RLIMIT_CORE": 0, "RLIMIT_FSIZE": spec.disk_mb * MIB}
    if not cgroups.limits_tasks and euid != 0:
        # RLIMIT_NPROC counts every task of this user (root is exempt), so allow what already runs plus the budget.
        rlimits["RLIMIT_NPROC"] = user_task_count() + spec.max_tasks + 16
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


def _killed_outside(rc: int | None, status: str | None, sandboxed: bool) -> str:
    """Why an unexplained SIGKILL (no limit of ours) was not the submission's doing, or '' when nothing shows it.

    A SIGKILL of a process inside the sandbox cannot be told from one the submission sent itself (``kill``, a timer,
    ``RLIMIT_CPU``): that stays the submission's. Evidence of the outside, in a sandbox only (unsandboxed, the
    submission runs as init.py's own child and user and can kill it): init.py itself died without saying how its
    command ended, or bubblewrap's outer process (in the host's pid namespace, out of the sandbox's reach) was killed.
    Without a memory cgroup an out-of-memory kill stays the submission's: memory no sample sees (a memfd, pipe
    buffers) could exhaust the host while the run read "below its limit"."""
    if sandboxed and rc == -signal.SIGKILL and status is None:
        return "the sandbox's supervisor (init.py, outside the sandbox) was killed by SIGKILL from outside it"
    if sandboxed and status == f"signal {int(signal.SIGKILL)}":
        return "bubblewrap (outside the sandbox) was killed by SIGKILL from outside it"
    return ""


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
