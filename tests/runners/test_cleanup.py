"""Issue 11, item 7: what killed runs leave behind (job folders with the submitted source, per-run cgroups) is swept,
and only that: a live run's folder and cgroup, a folder too young to judge, and anything not ours stay."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from runners import cleanup
from runners.sandbox.cgroups import create_run_cgroups

OLD = time.time() - 3600


def job_folder(root: Path, name: str, *, old: bool = True) -> Path:
    folder = root / f"kernelcup-job-{name}"
    (folder / "tmp").mkdir(parents=True)
    (folder / "submission.py").write_text("def custom_kernel(d):\n    return d  # secret sauce\n")
    ro = folder / "problem"
    ro.mkdir()
    (ro / "reference.py").write_text("x = 1\n")
    os.chmod(ro / "reference.py", 0o444)
    os.chmod(ro, 0o555)  # runs leave read-only files and folders behind (anti-cheat)
    if old:
        for path in (folder / "tmp", folder / "submission.py", ro, folder):
            os.utime(path, (OLD, OLD))
    return folder


def test_stale_job_folders_go_and_live_or_young_ones_stay(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    stale = job_folder(root, "dead")
    young = job_folder(root, "starting", old=False)
    live = job_folder(root, "running")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "kernelcup-job-link").symlink_to(outside, target_is_directory=True)
    (root / "unrelated").mkdir()
    os.utime(live, (OLD, OLD))
    sleeper = subprocess.Popen(["sleep", "30"], cwd=live / "tmp")  # a run's process works inside its folder
    try:
        report = cleanup.sweep_job_dirs(root, grace_s=300)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert report.job_dirs == [stale] and not stale.exists()
    assert young.exists() and live.exists() and outside.exists() and (root / "unrelated").exists()
    assert (root / "kernelcup-job-link").is_symlink()
    assert report.kept_alive == 2 and not report.errors
    # Once its process is gone the live run's folder is stale too.
    assert cleanup.sweep_job_dirs(root, grace_s=300).job_dirs == [live]


def test_sweep_uses_the_runner_job_root(tmp_path: Path) -> None:
    from runners.settings import RunnerSettings

    stale = job_folder(tmp_path, "x")
    report = cleanup.sweep(RunnerSettings(_env_file=None, job_root=tmp_path), grace_s=300)
    assert stale in report.job_dirs and not stale.exists()


def test_empty_run_cgroups_go_and_busy_ones_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    dead = create_run_cgroups(256 << 20, 64)
    busy = create_run_cgroups(256 << 20, 64)
    if not dead.dirs or not busy.dirs:
        dead.remove()
        busy.remove()
        pytest.skip("run cgroups cannot be created here: " + "; ".join(dead.notes))
    names = {d.name for d in dead.dirs + busy.dirs}
    # Only this test's cgroups: other runs on this machine are none of its business.
    monkeypatch.setattr(cleanup, "CGROUP_NAME", re.compile("^(" + "|".join(map(re.escape, names)) + ")$"))
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        for procs in busy.procs_files:
            Path(procs).write_text(str(sleeper.pid))
        report = cleanup.sweep_cgroups(grace_s=0)
        assert sorted(report.cgroups) == sorted(dead.dirs)
        assert not any(d.exists() for d in dead.dirs)
        assert all(d.exists() for d in busy.dirs)
    finally:
        sleeper.kill()
        sleeper.wait()
        busy.remove()
        dead.remove()
