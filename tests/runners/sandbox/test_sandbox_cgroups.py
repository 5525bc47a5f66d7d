"""Where a run's cgroup goes and how its counters are read, on a fake cgroup tree (the kernel's behaviour itself is
covered by the limit tests, on whatever cgroup version the machine has)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.sandbox.cgroups import RunCgroups, _Mount, _v2_parent, create_run_cgroups


def _cgroup(path: Path, controllers: str = "", subtree: str = "") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "cgroup.controllers").write_text(controllers + "\n")
    (path / "cgroup.subtree_control").write_text(subtree + "\n")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> tuple[_Mount, Path]:
    root = _cgroup(tmp_path / "cg", "cpu memory pids", "cpu memory pids")
    return _Mount(point=root, root="/", version=2, controllers=frozenset()), root


def test_v2_runs_go_next_to_a_delegated_leaf(tree: tuple[_Mount, Path]) -> None:
    mount, root = tree
    service = _cgroup(root / "worker.service", "memory pids", "memory pids")
    _cgroup(service / "runner", "memory pids", "")
    assert _v2_parent(mount, "/worker.service/runner") == service


def test_v2_own_cgroup_used_when_it_delegates(tree: tuple[_Mount, Path]) -> None:
    mount, root = tree
    own = _cgroup(root / "a" / "b", "memory pids", "memory pids")
    _cgroup(root / "a", "memory pids", "")
    assert _v2_parent(mount, "/a/b") == own


def test_v2_without_delegation_gives_up(tree: tuple[_Mount, Path]) -> None:
    mount, root = tree
    _cgroup(root / "user.slice", "cpu", "")
    _cgroup(root / "user.slice" / "session", "cpu", "")
    assert _v2_parent(mount, "/user.slice/session") is None


def test_counters_read_from_the_files(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "cgroup.procs").write_text("12\n13\n")
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    (d / "memory.current").write_text("1048576\n")
    (d / "pids.events").write_text("max 3\n")
    run = RunCgroups(dirs=[d], memory_dir=d, memory_version=2, pids_dir=d)
    assert run.pids() == {12, 13}
    assert run.oom_kills() == 1 and run.memory_bytes() == 1 << 20 and run.tasks_limit_hit()
    (d / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert RunCgroups(dirs=[d], memory_dir=d, memory_version=1).oom_kills() == 2


def test_nothing_made_is_harmless() -> None:
    run = RunCgroups()
    assert run.procs_files == [] and run.pids() == set() and run.oom_kills() == 0
    assert run.memory_bytes() is None and not run.tasks_limit_hit()
    run.kill_all()
    run.remove()


def test_real_cgroups_are_made_and_removed() -> None:
    run = create_run_cgroups(256 << 20, 64)
    if not run.dirs:
        pytest.skip(f"no cgroups can be made here: {run.notes}")
    try:
        assert all(d.is_dir() for d in run.dirs)
        if run.memory_dir is not None:
            limit = "memory.max" if run.memory_version == 2 else "memory.limit_in_bytes"
            assert int((run.memory_dir / limit).read_text()) == 256 << 20
    finally:
        dirs = list(run.dirs)
        run.remove()
    assert not any(d.exists() for d in dirs)


def test_a_cgroup_still_busy_when_removed_is_removed_by_the_next_creation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runners.sandbox.cgroups as cgroups

    busy = tmp_path / "kernelcup-busy"
    (busy / "inner").mkdir(parents=True)  # rmdir fails (not empty), as on a cgroup whose tasks are still exiting
    monkeypatch.setattr(cgroups.time, "sleep", lambda s: None)
    monkeypatch.setattr(cgroups, "_LEFT_BEHIND", set())
    RunCgroups(dirs=[busy]).remove()
    assert busy.exists()
    left_behind = cgroups._LEFT_BEHIND
    assert left_behind == {busy}
    (busy / "inner").rmdir()  # the tasks are gone
    create_run_cgroups(64 << 20, 16).remove()
    assert not busy.exists() and not cgroups._LEFT_BEHIND
