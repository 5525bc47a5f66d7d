"""Sweeping what killed runs leave behind: job folders (with the submitted source) and per-run cgroups.

A run normally removes both itself. A runner killed with SIGKILL (or a machine that lost power) cannot, so a worker
sweeps at start and every ``KERNELCUP_WORKER_SWEEP_S``. Only what belongs to runs that are no longer alive goes:

- a job folder (``kernelcup-job-*`` under ``KERNELCUP_JOB_ROOT`` or the system temp directory, owned by us) is
  stale when no process has its working directory or root inside it (a run's sandbox, ``init.py`` and bubblewrap
  all start there) and nothing in its top level changed for ``grace_s`` (a run between making its folder and
  starting its process is younger than that);
- a cgroup (``kernelcup-<12 hex>``, where ``runners.sandbox.cgroups`` makes them) is stale when no process is in
  it, it has no child cgroups, and it is older than ``grace_s`` (a run's cgroup is empty for a moment before its
  process joins).

Never raises: a sweep that cannot look somewhere says so in its report and the log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from runners.sandbox.cgroups import _dir_for, _mounts, _own_paths
from runners.sandbox.remove import remove_tree
from runners.settings import RunnerSettings

log = logging.getLogger(__name__)

JOB_PREFIX = "kernelcup-job-"
"""``runners.entry`` makes each run's folder with this prefix (``tempfile.mkdtemp``)."""
CGROUP_NAME = re.compile(r"^kernelcup-[0-9a-f]{12}$")
"""``runners.sandbox.cgroups.create_run_cgroups`` names each run's cgroup so."""
GRACE_S = 300.0


@dataclass
class SweepReport:
    job_dirs: list[Path] = field(default_factory=list)
    cgroups: list[Path] = field(default_factory=list)
    kept_alive: int = 0
    """Folders and cgroups left alone because a live run uses them (or they are too young to judge)."""
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = f"removed {len(self.job_dirs)} stale job folders and {len(self.cgroups)} stale cgroups"
        return text + (f"; {len(self.errors)} could not be removed" if self.errors else "")


def job_root(settings: RunnerSettings) -> Path:
    return settings.job_root if settings.job_root is not None else Path(tempfile.gettempdir())


def _proc_anchors() -> set[Path] | None:
    """The working directory and root of every process we can see (None: /proc cannot be read)."""
    anchors: set[Path] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for pid in entries:
        if not pid.isdigit():
            continue
        for link in ("cwd", "root"):
            with contextlib.suppress(OSError):
                anchors.add(Path(os.readlink(f"/proc/{pid}/{link}")))
    return anchors


def _in_use(folder: Path, anchors: set[Path]) -> bool:
    return any(a == folder or folder in a.parents for a in anchors)


def _newest_change(folder: Path) -> float:
    """The latest modification time of the folder and its top-level entries (a live run keeps touching them)."""
    newest = folder.lstat().st_mtime
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for entry in it:
            with contextlib.suppress(OSError):
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    return newest


def sweep_job_dirs(root: Path, *, grace_s: float = GRACE_S, report: SweepReport | None = None) -> SweepReport:
    """Remove stale ``kernelcup-job-*`` folders directly under ``root`` (see the module's rules)."""
    report = report or SweepReport()
    anchors = _proc_anchors()
    if anchors is None:
        report.errors.append("/proc cannot be read: job folders are not swept (cannot tell live runs apart)")
        return report
    now = time.time()
    try:
        candidates = [p for p in root.iterdir() if p.name.startswith(JOB_PREFIX)]
    except OSError as exc:
        report.errors.append(f"cannot list {root}: {exc.strerror or exc}")
        return report
    for folder in candidates:
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue  # a symlink, a file, or another user's: never ours to remove
            if _in_use(folder.resolve(), anchors) or now - _newest_change(folder) < grace_s:
                report.kept_alive += 1
                continue
            _make_removable(folder)
            remove_tree(folder)  # by descriptor: a run may nest its folders past PATH_MAX or Python's recursion limit
            if folder.exists():
                report.errors.append(f"{folder}: could not be removed entirely")
                continue
            report.job_dirs.append(folder)
        except OSError as exc:
            report.errors.append(f"{folder}: {exc.strerror or exc}")
    return report


def _make_removable(folder: Path) -> None:
    """Runs leave read-only files and folders (anti-cheat); give ourselves write access back to remove them."""
    for dirpath, dirnames, _ in os.walk(folder, followlinks=False):
        for name in [".", *dirnames]:
            with contextlib.suppress(OSError):
                path = os.path.join(dirpath, name)
                if not os.path.islink(path):
                    os.chmod(path, stat.S_IRWXU)


def cgroup_parents() -> list[Path]:
    """Every directory where ``create_run_cgroups`` may have made a run's cgroup from this process's place."""
    mounts, own = _mounts(), _own_paths()
    parents: list[Path] = []
    for mount in mounts:
        if mount.version == 2:
            base = _dir_for(mount, own.get(""))
            parents += [base] if base == mount.point else [base, base.parent]
        elif mount.controllers & {"memory", "pids"}:
            for controller in sorted(mount.controllers & {"memory", "pids"}):
                parents.append(_dir_for(mount, own.get(controller)))
    return list(dict.fromkeys(parents))


def _cgroup_busy(path: Path) -> bool:
    try:
        if (path / "cgroup.procs").read_text().split():
            return True
    except OSError:
        return True  # cannot tell: leave it
    return any(child.is_dir() for child in path.iterdir())


def sweep_cgroups(
    parents: list[Path] | None = None, *, grace_s: float = GRACE_S, report: SweepReport | None = None
) -> SweepReport:
    """Remove empty, old ``kernelcup-<hex>`` cgroups under ``parents`` (default: where this process makes them)."""
    report = report or SweepReport()
    now = time.time()
    for parent in parents if parents is not None else cgroup_parents():
        try:
            children = [c for c in parent.iterdir() if CGROUP_NAME.match(c.name) and c.is_dir()]
        except OSError:
            continue
        for cgroup in children:
            try:
                if _cgroup_busy(cgroup) or now - cgroup.stat().st_mtime < grace_s:
                    report.kept_alive += 1
                    continue
                cgroup.rmdir()
                report.cgroups.append(cgroup)
            except OSError as exc:
                report.errors.append(f"{cgroup}: {exc.strerror or exc}")
    return report


def sweep(settings: RunnerSettings, *, grace_s: float = GRACE_S) -> SweepReport:
    """Sweep stale job folders and cgroups of this machine's runner; log what went."""
    report = sweep_job_dirs(job_root(settings), grace_s=grace_s)
    sweep_cgroups(grace_s=grace_s, report=report)
    if report.job_dirs or report.cgroups or report.errors:
        log.info("sweep: %s", report)
        for error in report.errors[:10]:
            log.warning("sweep: %s", error)
    return report
