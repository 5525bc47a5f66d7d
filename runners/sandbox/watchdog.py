"""The watchdog of a sandboxed run: it polls the process until it ends or breaks a limit (time, output, tasks,
memory where no cgroup enforces it, disk and file count), and kills the whole process tree at the end."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterable
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
    disk_bytes: int = 0
    """The most the job's files took at one count."""
    host_free_min: int | None = None
    """The least free space seen on the job directory's filesystem."""
    unlinked_after: int = 0
    """Where the next look for unlinked files starts (they are looked for a bounded time per poll)."""
    unlinked_held: dict[int, dict[tuple[int, int], int]] = field(default_factory=dict)
    """What each process of the run held unlinked when last looked at (see ``_add_unlinked``)."""
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
    last_zombies = 0
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
        pids: set[int] = set()
        if cgroups.dirs:
            # cgroup.procs lists live processes only, yet a zombie holds its pid until reaped: count those the pids
            # cgroup still charges (pids.current less the live threads), where they lasted two polls (a thread that
            # is exiting shows for microseconds as one), else fall back to the tree (/proc lists zombies).
            pids = cgroups.pids()
            zombies = cgroups.zombies()
            if zombies is None:
                tree = tree_of(root)
                processes = max(len(pids), len(tree))
            else:
                processes = len(pids) + min(zombies, last_zombies)
                last_zombies = zombies
        else:
            tree = tree_of(root)
            processes = len(tree)  # (zombies included: they stay in /proc, children of their parent, until reaped)
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
            running = pids or {p.pid for p in (tree if tree is not None else tree_of(root))}  # type: ignore[attr-defined]
            if check_disk(workdir, spec, watch, running):
                return


def check_disk(workdir: Path, spec: SandboxSpec, watch: Watch, pids: Iterable[int] = ()) -> bool:
    """Count the job's disk (and the host's free space); True, with the reason recorded, when the job is over its
    limit."""
    limit = spec.disk_mb * MIB
    usage = disk_usage(workdir, limit, pids, watch.unlinked_after, watch.unlinked_held)
    watch.unlinked_after = usage.resume
    watch.disk_bytes = max(watch.disk_bytes, usage.bytes)
    free = host_free_bytes(workdir)
    if free is not None:
        watch.host_free_min = free if watch.host_free_min is None else min(watch.host_free_min, free)
    if usage.over or usage.bytes > limit:
        watch.disk_limit_exceeded = True
        what = usage.over or f"wrote more than {spec.disk_mb} MB"
        watch.reason = f"{what} in the job directory (disk limit of {spec.disk_mb} MB, {MAX_FILES:,} files)"
        return True
    return False


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
MAX_DEPTH = 256
"""Folders nested deeper than this in a job directory count as over the disk limit. The walk holds one descriptor per
level (it never opens a path, so PATH_MAX does not bound it); no honest build nests a tenth as deep."""
LOW_HOST_DISK = 64 * MIB
"""Free space on the job directory's filesystem below which the runner's disk counts as full (the platform's lack,
when the job itself was below its limit)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
"""Errors of an entry that vanished or was replaced while the walk ran: an honest race, not something hidden."""


@dataclass
class DiskUsage:
    """What the job's files take on disk: allocated blocks (each inode once), the largest file, and why the walk counts
    as over the limit whatever the bytes (``over``: too many files, too deep, a folder it cannot read)."""

    bytes: int = 0
    largest: int = 0
    over: str = ""
    files: int = 0
    inodes: set[tuple[int, int]] = field(default_factory=set)
    resume: int = 0
    """The pid past which the next look for unlinked files starts (0: this look reached every process)."""

    def add(self, st: os.stat_result) -> None:
        if stat.S_ISDIR(st.st_mode):
            return  # a folder's own blocks are bounded through MAX_FILES, and a file of the largest size stays legal
        key = (st.st_dev, st.st_ino)
        if key in self.inodes:
            return  # a hard link: its blocks were counted with its first name
        self.inodes.add(key)
        self.bytes += st.st_blocks * 512  # allocated, not apparent: a sparse file counts what it holds
        if stat.S_ISREG(st.st_mode):
            self.largest = max(self.largest, st.st_size)


class _Open:
    """A folder's descriptor, kept open until every subfolder of it has been opened from it."""

    def __init__(self, fd: int, pending: int) -> None:
        self.fd, self.pending = fd, pending

    def took_one(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            os.close(self.fd)


def disk_usage(
    root: Path, stop_above: int, pids: Iterable[int] = (), after: int = 0, held: Held | None = None
) -> DiskUsage:
    """What the files under ``root`` take on disk, and the files of that filesystem that ``pids`` hold open after
    unlinking them (a walk never sees those), looking at the processes past pid ``after`` first for a bounded time
    (``usage.resume`` says where the next look starts). Stops counting past ``stop_above`` bytes.

    The walk goes from descriptor to descriptor (``openat`` of one name below an open folder), so no path is ever
    longer than one name: a folder nested deeper than PATH_MAX is counted like any other. It fails closed: past
    :data:`MAX_FILES` entries, past :data:`MAX_DEPTH` levels, or at a folder it cannot open or read for a reason other
    than its having just vanished, ``over`` says why and the job counts as over its limit."""
    usage = DiskUsage()
    try:
        top = os.open(root, _DIR_FLAGS)
    except OSError:
        return usage
    dev = os.fstat(top).st_dev
    stack: list[tuple[_Open, int, str, int]] = []
    try:
        subdirs = _scan(top, usage)
        if subdirs:
            parent = _Open(top, len(subdirs))
            stack += [(parent, top, name, 1) for name in subdirs]
        else:
            os.close(top)
        while stack and not usage.over and usage.bytes <= stop_above:
            parent, parent_fd, name, depth = stack.pop()
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
            except OSError as exc:
                fd = -1
                if exc.errno not in _GONE:
                    usage.over = f"made a folder the runner cannot read ({exc.strerror})"
            finally:
                parent.took_one()
            if fd < 0:
                continue
            if depth > MAX_DEPTH:
                os.close(fd)
                usage.over = f"nested folders more than {MAX_DEPTH} deep"
                break
            try:
                subdirs = _scan(fd, usage)
            except BaseException:
                os.close(fd)
                raise
            if subdirs:
                holder = _Open(fd, len(subdirs))
                stack += [(holder, fd, sub, depth + 1) for sub in subdirs]
            else:
                os.close(fd)
    finally:
        for parent, _fd, _name, _depth in stack:
            if parent.pending > 0:
                parent.took_one()
    if not usage.over and usage.bytes <= stop_above:
        usage.resume = _add_unlinked(usage, dev, pids, after, held)
    return usage


def _scan(fd: int, usage: DiskUsage) -> list[str]:
    """Count one folder's entries (by its descriptor); return the names of its subfolders."""
    subdirs: list[str] = []
    try:
        with os.scandir(fd) as it:
            for entry in it:
                usage.files += 1
                if usage.files > MAX_FILES:
                    usage.over = f"made more than {MAX_FILES:,} files and folders"
                    return []
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    if exc.errno in _GONE:
                        continue
                    usage.over = f"made a file the runner cannot examine ({exc.strerror})"
                    return []
                usage.add(st)
                if stat.S_ISDIR(st.st_mode):
                    subdirs.append(entry.name)
    except OSError as exc:
        if exc.errno not in _GONE:
            usage.over = f"made a folder the runner cannot read ({exc.strerror})"
        return []
    return subdirs


UNLINKED_LOOK_S = 0.05
"""Time one look for unlinked files may take. A run of many processes (a fork bomb: a thousand copies of an
interpreter with PyTorch's mappings) would otherwise hold the watchdog for tens of seconds per look, and no other limit
is checked meanwhile (issue 37 follow-up: the task limit was seen 37 s late, or never within the run's time); the
processes not reached are looked at first next time."""


Held = dict[int, dict[tuple[int, int], int]]
"""Per process of the run: the unlinked files it was last seen holding, (device, inode) -> allocated bytes."""


def _add_unlinked(usage: DiskUsage, dev: int, pids: Iterable[int], after: int = 0, held: Held | None = None) -> int:
    """Add the files on the job's filesystem (``dev``) that the run's processes hold open or mapped after unlinking
    them: their blocks stay allocated, yet no walk finds them. Looks at processes in pid order, starting past
    ``after``, until :data:`UNLINKED_LOOK_S` is spent; returns the last pid looked at when it stopped early (pass it as
    ``after`` next time), else 0.

    ``held`` (kept by the caller from look to look) remembers what each process held when last looked at, so a look
    cut short still adds what the processes it did not reach were holding: a run of many processes with many mappings
    must not hide files by making every look partial. Processes that ended are dropped from it."""
    ring = sorted(pids)
    held = {} if held is None else held
    for gone in set(held) - set(ring):
        del held[gone]
    order = [p for p in ring if p > after] + [p for p in ring if p <= after]
    deadline = time.monotonic() + UNLINKED_LOOK_S
    resume = 0
    for pid in order:
        held[pid] = _unlinked_of(usage, dev, pid)
        if usage.over:
            break
        if time.monotonic() > deadline:
            resume = 0 if pid == ring[-1] else pid  # (past the highest pid, the next look starts from the lowest)
            break
    counted: set[tuple[int, int]] = set()
    for files in held.values():
        for key, size in files.items():
            if key not in usage.inodes and key not in counted:
                counted.add(key)
                usage.bytes += size
    return resume


def _unlinked_of(usage: DiskUsage, dev: int, pid: int) -> dict[tuple[int, int], int]:
    """The unlinked files on ``dev`` that ``pid`` holds open or mapped: (device, inode) -> allocated bytes. Counts each
    descriptor in ``usage.files`` (a run holding :data:`MAX_FILES` of them is over)."""
    found: dict[tuple[int, int], int] = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        fds = []
    for name in fds:
        usage.files += 1
        if usage.files > MAX_FILES:
            usage.over = f"made more than {MAX_FILES:,} files and folders"
            return found
        try:
            st = os.stat(f"/proc/{pid}/fd/{name}")  # follows the magic link to the open file itself
        except OSError:
            continue
        if st.st_dev == dev and st.st_nlink == 0 and stat.S_ISREG(st.st_mode):
            found[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    for start, end, inode in _deleted_mappings(pid, dev):
        if (dev, inode) in found:
            continue
        try:
            # map_files needs CAP_SYS_ADMIN; without it, the mapping's length stands for the file's blocks.
            st = os.stat(f"/proc/{pid}/map_files/{start:x}-{end:x}")
        except OSError:
            found[(dev, inode)] = end - start
            continue
        if st.st_dev == dev and st.st_nlink == 0 and stat.S_ISREG(st.st_mode):
            found[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return found


def _deleted_mappings(pid: int, dev: int) -> list[tuple[int, int, int]]:
    """(start, end, inode) of each mapping of ``pid`` whose file on ``dev`` was deleted, from ``/proc/<pid>/maps``
    (one read, whatever the number of mappings; ``map_files`` would cost a lookup per mapping)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            text = f.read()
    except OSError:
        return []
    want = f"{os.major(dev):02x}:{os.minor(dev):02x}".encode()
    found: list[tuple[int, int, int]] = []
    for line in text.splitlines():
        if not line.endswith(b" (deleted)"):
            continue
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or fields[3] != want:
            continue
        try:
            low, high = (int(x, 16) for x in fields[0].split(b"-"))
            found.append((low, high, int(fields[4])))
        except ValueError:
            continue
    return found


def host_free_bytes(root: Path) -> int | None:
    """Space left to unprivileged writers on the filesystem that holds ``root`` (None if it cannot be asked)."""
    try:
        st = os.statvfs(root)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


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
