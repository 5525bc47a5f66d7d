"""The disk limit counts everything a run keeps on disk, however it hides it (issue 37, class 1): folders nested deeper
than PATH_MAX, files unlinked but held open, hard links (once), sparse files (their blocks), folders too deep or too
many to count (over the limit), and the sandbox's other writable places (/dev/shm bounded, /tmp read-only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import runners.sandbox.watchdog as watchdog
from runners.sandbox.watchdog import disk_usage

MIB = 1 << 20
# A name of 200 characters, 25 levels deep: 5,000 characters of path, past Linux's PATH_MAX of 4,096.
LONG = "d" * 200
LEVELS = 25


def _nest(root: Path, levels: int, name: str) -> int:
    """Folders ``levels`` deep below ``root``, made by descriptor (no path is ever that long); the deepest one's fd."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    return fd


def test_a_file_below_path_max_is_counted(tmp_path: Path) -> None:
    fd = _nest(tmp_path, LEVELS, LONG)
    try:
        out = os.open("data", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"x" * (3 * MIB))
        os.fsync(out)
        os.close(out)
    finally:
        os.close(fd)
    with pytest.raises(OSError):  # (the walk by path that issue 37 defeated: this folder cannot be opened by path)
        os.scandir(str(tmp_path / "/".join([LONG] * LEVELS)))
    usage = disk_usage(tmp_path, 1 << 40)
    assert usage.bytes >= 3 * MIB and not usage.over


def test_folders_past_the_depth_limit_count_as_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watchdog, "MAX_DEPTH", 20)
    os.close(_nest(tmp_path, 25, "a"))
    usage = disk_usage(tmp_path, 1 << 40)
    assert "20 deep" in usage.over


def test_hard_links_count_once_and_sparse_files_their_blocks(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * (2 * MIB))
    for i in range(10):
        os.link(tmp_path / "f", tmp_path / f"link{i}")
    with open(tmp_path / "sparse", "wb") as f:
        f.truncate(1 << 30)
    usage = disk_usage(tmp_path, 1 << 40)
    assert 2 * MIB <= usage.bytes < 3 * MIB
    assert usage.largest == 1 << 30  # (RLIMIT_FSIZE's concern: the largest file's size, sparse or not)


def test_six_gigabytes_below_path_max_in_a_run_break_the_limit(run_py, sandboxed: None) -> None:
    # The red team's attack, scaled down: files below a folder deeper than PATH_MAX, each under RLIMIT_FSIZE.
    out = run_py(
        f"""
        import os, time
        fd = os.open('.', os.O_RDONLY)
        for _ in range({LEVELS}):
            os.mkdir({LONG!r}, dir_fd=fd)
            fd = os.open({LONG!r}, os.O_RDONLY, dir_fd=fd)
        for i in range(4):
            f = os.open(f'part{{i}}', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(f, b'x' * (12 << 20))
            os.close(f)
        print('written', flush=True)
        time.sleep(20)
        """,
        disk_mb=16,
        timeout_s=20,
    )
    assert out.disk_limit_exceeded and not out.timed_out, out.killed_reason
    assert "16 MB" in out.killed_reason and not out.infrastructure_failure


# At most one 12 MB file has a name at any time: only the unlinked ones, held open or mapped, take the job past 16 MB.
HELD_OPEN = """
held = []
for i in range(4):
    f = open(f'hidden{i}', 'wb')
    f.write(b'x' * (12 << 20))
    f.flush()
    os.unlink(f'hidden{i}')
    held.append(f)
"""
MAPPED = """
maps = []
for i in range(4):
    with open(f'mapped{i}', 'w+b') as f:
        f.write(b'x' * (12 << 20))
        f.flush()
        maps.append(mmap.mmap(f.fileno(), 12 << 20))
    os.unlink(f'mapped{i}')
"""


@pytest.mark.parametrize("hide", [HELD_OPEN, MAPPED], ids=["held-open", "mapped"])
def test_unlinked_files_still_in_use_break_the_limit(run_py, hide: str) -> None:
    out = run_py(f"import mmap, os, time\n{hide}\ntime.sleep(20)", disk_mb=16, timeout_s=20)
    assert out.disk_limit_exceeded and not out.timed_out, out.killed_reason


def test_hard_links_do_not_count_against_an_honest_run(run_py) -> None:
    out = run_py(
        "import os\nopen('f', 'wb').write(b'x' * (10 << 20))\n"
        "for i in range(10):\n    os.link('f', f'link{i}')\nimport time\ntime.sleep(1.5)\nprint('ok')",
        disk_mb=32,
    )
    assert out.returncode == 0 and out.stdout == "ok\n", out.killed_reason


def test_tmp_is_read_only_and_dev_shm_bounded(run_py, sandboxed: None) -> None:
    out = run_py(
        """
        import errno
        try:
            open('/tmp/x', 'wb')
        except OSError as e:
            print('tmp', errno.errorcode[e.errno])
        try:
            with open('/dev/shm/big', 'wb') as f:
                for _ in range(300):
                    f.write(b'x' * (1 << 20))
        except OSError as e:
            print('shm', errno.errorcode[e.errno])
        """,
        memory_mb=512,
        disk_mb=1024,
    )
    assert "tmp EROFS" in out.stdout and "shm ENOSPC" in out.stdout, out.stdout + out.stderr


def test_a_deleted_mapping_is_found_from_the_maps_listing(tmp_path: Path) -> None:
    import mmap

    with open(tmp_path / "mapped", "w+b") as f:
        f.write(b"x" * (3 * MIB))
        f.flush()
        view = mmap.mmap(f.fileno(), 3 * MIB)
    os.unlink(tmp_path / "mapped")  # no descriptor and no name left: only the mapping holds its blocks
    try:
        dev = os.stat(tmp_path).st_dev
        assert [end - start for start, end, _ in watchdog._deleted_mappings(os.getpid(), dev)] == [3 * MIB]
        assert disk_usage(tmp_path, 1 << 40, [os.getpid()]).bytes >= 3 * MIB
    finally:
        view.close()


def test_a_look_for_unlinked_files_is_bounded_and_the_next_one_goes_on_from_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A thousand processes held the watchdog for tens of seconds per look, and it checked no other limit meanwhile
    # (CI: a fork bomb ended in a timeout, not "too many processes"). Each look now stops at its time budget, and the
    # next starts with the processes the last one did not reach.
    looked: list[int] = []
    monkeypatch.setattr(watchdog, "UNLINKED_LOOK_S", 0.0)  # every look stops after one process

    def look(usage: watchdog.DiskUsage, dev: int, pid: int) -> dict[tuple[int, int], int]:
        looked.append(pid)
        return {}

    monkeypatch.setattr(watchdog, "_unlinked_of", look)
    pids = [301, 102, 205]
    after, rounds = 0, 0
    while True:
        after = disk_usage(tmp_path, 1 << 40, pids, after).resume
        rounds += 1
        if after == 0:
            break
    assert looked == [102, 205, 301] and rounds == 3
    looked.clear()
    assert disk_usage(tmp_path, 1 << 40, pids, 102).resume == 205 and looked == [205]  # from where the last one stopped


def test_files_held_by_processes_a_short_look_did_not_reach_still_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # Red team: with every look cut short (a tree of processes with heavy mappings), each poll saw only one process's
    # files, and four processes each holding 10 MB never broke a 25 MB limit. What a process was last seen holding
    # counts until it is looked at again or ends.
    holding = {11: {(1, 101): 10 * MIB}, 12: {(1, 102): 10 * MIB}, 13: {(1, 103): 10 * MIB}, 14: {(1, 104): 10 * MIB}}
    monkeypatch.setattr(watchdog, "UNLINKED_LOOK_S", 0.0)  # every look stops after one process
    monkeypatch.setattr(watchdog, "_unlinked_of", lambda usage, dev, pid: dict(holding[pid]))
    held: watchdog.Held = {}
    after, seen = 0, []
    for _ in range(4):
        usage = watchdog.DiskUsage()
        after = watchdog._add_unlinked(usage, 1, list(holding), after, held)
        seen.append(usage.bytes // MIB)
    assert seen == [10, 20, 30, 40]
    usage = watchdog.DiskUsage()
    watchdog._add_unlinked(usage, 1, [11, 12], 0, held)  # 13 and 14 ended: their files are no longer held
    assert usage.bytes == 20 * MIB and set(held) == {11, 12}
