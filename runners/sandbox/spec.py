"""What a sandboxed run is asked to do (:class:`SandboxSpec`) and what came of it (:class:`ProcessOutcome`)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1024 * 1024


class SandboxUnavailable(Exception):
    """The sandbox cannot run on this machine and the caller required it."""


class Handover:
    """The moment a pre-started process gets its job (runners/entry/prestart.py). Until then it may only wait, for at
    most ``idle_s`` from its start; from :meth:`give` on, its time limit is the one given there, counted from then."""

    def __init__(self, idle_s: float) -> None:
        self.idle_s = idle_s
        self.timeout_s: float | None = None
        self.at: float | None = None
        self._lock = threading.Lock()

    def give(self, timeout_s: float) -> float:
        """Hand the job over now (once; a second call changes nothing): the time limit counts from here."""
        with self._lock:
            if self.at is None:
                self.timeout_s = timeout_s
                self.at = time.monotonic()
            return self.at

    def limit(self, started: float) -> tuple[float, float, bool]:
        """(when the limit counts from, the limit in seconds, whether it is the idle limit) for a process started at
        ``started``."""
        with self._lock:
            if self.at is None or self.timeout_s is None:
                return started, self.idle_s, True
            return self.at, self.timeout_s, False


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
    gpu_node: str | None = None
    """With ``allow_gpu``: the one GPU device node to bind (``/dev/nvidia3``), or several joined by commas (the GPUs of
    a run of several ranks); None binds every GPU's."""
    require_sandbox: bool = False
    max_tasks: int = 1024
    """Processes + threads: the kernel's hard cap (pids cgroup, else ``RLIMIT_NPROC``)."""
    max_processes: int = 128
    """Processes (not threads) the watchdog allows, counting the sandbox's own two or three; a fork bomb of a
    process that has imported PyTorch forks slowly, so this trips long before ``max_tasks`` would."""
    disk_mb: int = 4096
    """Largest file (RLIMIT_FSIZE) and total size of the job directory (watchdog)."""
    max_output_bytes: int = 64 * MIB
    """stdout + stderr past which the process is killed (``output_limit_exceeded``); only the cap is kept."""
    cancel: threading.Event | None = field(default=None, compare=False)
    """Set from another thread to kill the whole process tree at once (``cancelled`` in the outcome)."""
    handover: Handover | None = field(default=None, compare=False)
    """A pre-started process: ``timeout_s`` is ignored; it waits at most ``handover.idle_s`` for its job, then has the
    time limit given at the hand-over, counted from the hand-over."""


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
    infrastructure_failure: str = ""
    """What the platform did to the run, in words, where that and not the submission ended or hampered it: a SIGKILL
    from outside the sandbox (an operator, the host's out-of-memory killer), the runner's disk full while the job was
    below its disk limit. '' when nothing was seen. Never set for a limit the run itself exceeded."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.killed_reason
