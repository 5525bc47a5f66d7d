"""Per-run cgroups: a memory cap the kernel enforces and a task cap against fork bombs, where we may create them.

Works with cgroup v2 (``memory.max``, ``pids.max``) and v1 (``memory.limit_in_bytes``, ``pids.max``). Creating a
cgroup needs write access to our own cgroup directory (root, or a systemd unit with ``Delegate=yes``); where that is
not the case, :func:`create_run_cgroups` returns an object with no directories and the runner falls back to its
RSS watchdog and ``RLIMIT_NPROC`` (see docs/sandbox.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class _Mount:
    point: Path
    root: str
    version: int
    controllers: frozenset[str]


def _mounts() -> list[_Mount]:
    mounts: list[_Mount] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return mounts
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3 or rfields[0] not in ("cgroup", "cgroup2"):
            continue
        version = 2 if rfields[0] == "cgroup2" else 1
        opts = frozenset(rfields[2].split(",")) if version == 1 else frozenset()
        mounts.append(_Mount(Path(fields[4]), fields[3], version, opts))
    return mounts


def _own_paths() -> dict[str, str]:
    """Controller name (or '' for v2) -> our cgroup path, from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            paths[controller] = parts[2]
    return paths


def _dir_for(mount: _Mount, own: str | None) -> Path:
    """Our cgroup's directory under ``mount``, or the mount itself if our path is not visible there."""
    if own is not None:
        rel = own[len(mount.root) :] if own.startswith(mount.root) else own
        candidate = mount.point / rel.lstrip("/")
        if candidate.is_dir():
            return candidate
    return mount.point


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
    except OSError:
        return False
    return True


def _read_key(path: Path, key: str) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


_CHARGE_SLACK = 1 << 20
"""How far below its limit a v1 memory cgroup's high-water mark may stop when the limit was what failed a charge
(charges come in batches of pages)."""


@dataclass
class RunCgroups:
    """The cgroups of one run; every method is safe to call when nothing could be created."""

    dirs: list[Path] = field(default_factory=list)
    memory_dir: Path | None = None
    memory_version: int = 0
    pids_dir: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    @property
    def limits_memory(self) -> bool:
        return self.memory_dir is not None

    @property
    def limits_tasks(self) -> bool:
        return self.pids_dir is not None

    def memory_bytes(self) -> int | None:
        if self.memory_dir is None:
            return None
        name = "memory.current" if self.memory_version == 2 else "memory.usage_in_bytes"
        try:
            return int((self.memory_dir / name).read_text())
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int:
        if self.memory_dir is None:
            return 0
        if self.memory_version == 2:
            return _read_key(self.memory_dir / "memory.events", "oom_kill")
        return _read_key(self.memory_dir / "memory.oom_control", "oom_kill")

    def tasks_limit_hit(self) -> bool:
        """True once a fork in the run's pids cgroup has been refused (the 'max' counter of pids.events)."""
        return self.pids_dir is not None and _read_key(self.pids_dir / "pids.events", "max") > 0

    def zombies(self) -> int | None:
        """Tasks the run's pids cgroup still charges that no longer run (zombies: exited, not yet reaped), or None
        without a pids cgroup. ``cgroup.procs`` and ``tasks`` leave them out; ``pids.current`` counts them."""
        if self.pids_dir is None:
            return None
        threads_file = self.pids_dir / ("tasks" if (self.pids_dir / "tasks").exists() else "cgroup.threads")
        try:
            current = int((self.pids_dir / "pids.current").read_text())
            threads = len(threads_file.read_text().split())
        except (OSError, ValueError):
            return None
        return max(0, current - threads)

    def limit_reached(self) -> bool:
        """Whether the run's memory ever reached its own limit (v2: ``max`` or ``oom`` in ``memory.events``; v1: the
        high-water mark within a charge batch of the limit, or a failure count, of memory or memory+swap): an OOM kill
        without it was the host's out-of-memory killer, not the run's limit. (v1's ``memory.failcnt`` alone is not
        enough: a 6.x kernel left it 0 after an OOM kill at the limit.)"""
        d = self.memory_dir
        if d is None:
            return False
        if self.memory_version == 2:
            events = d / "memory.events"
            return _read_key(events, "max") > 0 or _read_key(events, "oom") > 0
        try:
            for prefix in ("memory.", "memory.memsw."):
                if not (d / f"{prefix}limit_in_bytes").exists():
                    continue
                if int((d / f"{prefix}failcnt").read_text()) > 0:
                    return True
                peak, limit = (int((d / f"{prefix}{n}").read_text()) for n in ("max_usage_in_bytes", "limit_in_bytes"))
                if peak + _CHARGE_SLACK >= limit:
                    return True
        except (OSError, ValueError):
            return True  # cannot tell: the limit keeps the blame it always had
        return False

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(x) for x in (d / "cgroup.procs").read_text().split())
        return found

    def kill_all(self) -> None:
        for d in self.dirs:
            if (d / "cgroup.kill").exists() and _write(d / "cgroup.kill", "1"):
                continue
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.001)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(100):
                if _rmdir(d):
                    break
                time.sleep(0.01)
            else:
                # Killed processes still tearing down (a fork bomb's thousand exits) keep it busy past a second:
                # the next run's creation tries again rather than leave one empty cgroup per such run behind.
                _LEFT_BEHIND.add(d)
        self.dirs.clear()


_LEFT_BEHIND: set[Path] = set()
"""Cgroups of this process's finished runs that were still busy when removed."""


def _rmdir(d: Path) -> bool:
    try:
        d.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _sweep_left_behind() -> None:
    for d in list(_LEFT_BEHIND):
        if _rmdir(d):
            _LEFT_BEHIND.discard(d)


def _controllers(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _v2_parent(mount: _Mount, own: str | None) -> Path | None:
    """Where a run's cgroup v2 can go: a cgroup that hands the memory controller to its children.

    Our own cgroup holds this process, so (the root aside) it cannot enable controllers for children: the kernel's
    "no internal processes" rule. The usual delegated layout (systemd ``Delegate=yes``) has the runner in a leaf,
    e.g. ``worker.service/runner``, with ``+memory +pids`` in ``worker.service/cgroup.subtree_control``; runs then
    go next to that leaf."""
    base = _dir_for(mount, own)
    candidates = [base] if base == mount.point else [base, base.parent]
    for candidate in candidates:
        if "memory" in _controllers(candidate / "cgroup.subtree_control"):
            return candidate
    if "memory" in _controllers(base / "cgroup.controllers") and _write(
        base / "cgroup.subtree_control", "+memory +pids"
    ):
        return base
    return None


def _create_v2(run: RunCgroups, mount: _Mount, own: str | None, name: str, memory_bytes: int, max_tasks: int) -> None:
    parent = _v2_parent(mount, own)
    if parent is None:
        run.notes.append("cgroup v2 memory controller not delegated to the runner")
        return
    d = parent / name
    try:
        d.mkdir()
    except OSError as exc:
        run.notes.append(f"cgroup v2 not writable ({exc.strerror})")
        return
    run.dirs.append(d)
    have = _controllers(d / "cgroup.controllers")
    if "memory" in have and _write(d / "memory.max", str(memory_bytes)):
        _write(d / "memory.swap.max", "0")
        _write(d / "memory.oom.group", "1")  # an OOM kills the whole run, not one of its processes
        run.memory_dir, run.memory_version = d, 2
    if "pids" in have and _write(d / "pids.max", str(max_tasks)):
        run.pids_dir = d
    if run.memory_dir is None and run.pids_dir is None:
        run.remove()
        run.notes.append("cgroup v2 controllers not available to the run")


def create_run_cgroups(memory_bytes: int, max_tasks: int) -> RunCgroups:
    """Create a memory and a pids cgroup for one run where possible; never raises."""
    _sweep_left_behind()
    run = RunCgroups()
    mounts, own = _mounts(), _own_paths()
    name = f"kernelcup-{uuid.uuid4().hex[:12]}"
    v2 = next((m for m in mounts if m.version == 2), None)
    v1 = {c: m for m in mounts if m.version == 1 for c in m.controllers & {"memory", "pids"}}

    if v2 is not None and "memory" not in v1:
        _create_v2(run, v2, own.get(""), name, memory_bytes, max_tasks)
        return run

    for controller in ("memory", "pids"):
        mount = v1.get(controller)
        if mount is None:
            continue
        d = _dir_for(mount, own.get(controller)) / name
        try:
            d.mkdir()
        except OSError as exc:
            run.notes.append(f"cgroup v1 {controller} not writable ({exc.strerror})")
            continue
        run.dirs.append(d)
        if controller == "memory" and _write(d / "memory.limit_in_bytes", str(memory_bytes)):
            _write(d / "memory.memsw.limit_in_bytes", str(memory_bytes))
            run.memory_dir, run.memory_version = d, 1
        elif controller == "pids" and _write(d / "pids.max", str(max_tasks)):
            run.pids_dir = d
    return run


def kernel_caps_tasks() -> bool:
    """Whether the kernel itself will stop a run's fork bomb here: a pids cgroup can be made, or we are not root.

    RLIMIT_NPROC never binds uid 0 (the kernel exempts the root user whatever its capabilities), so a root runner
    without a pids cgroup has only the polling watchdog, which an exponential fork bomb can outrun on a loaded
    machine.
    """
    if os.geteuid() != 0:
        return True
    cgroups = create_run_cgroups(256 << 20, 64)
    try:
        return cgroups.limits_tasks
    finally:
        cgroups.remove()
