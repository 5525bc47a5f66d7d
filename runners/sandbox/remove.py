"""Removing a job folder whatever a run made in it: :func:`remove_tree`.

``shutil.rmtree`` recurses once per level (Python 3.11), so a run that nests folders a few thousand deep (a fraction
of a second's work, before the disk watchdog's next count) makes it raise ``RecursionError``: the folder stays on the
runner's disk, and the error escapes from the runner's clean-up as if the platform had failed (issue 37)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(root: Path | str) -> None:
    """Delete ``root`` and everything below it, by descriptor and without recursion: no depth or PATH_MAX bounds it,
    and it holds two descriptors at a time. Symbolic links are removed, never followed. Folders without write or
    search permission are made so first (a run may ``chmod 0`` its own). Errors are ignored, as
    ``shutil.rmtree(..., ignore_errors=True)`` does; call it only once nothing runs in ``root`` any more."""
    try:
        cur = os.open(root, _DIR_FLAGS)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(root)  # a file or a link where the folder was: removed, not followed
        return
    top = os.fstat(cur)
    # For each level below root: the name of the folder open at that level, and its parent's identity.
    names: list[str] = []
    parents: list[tuple[int, int]] = []
    # Subfolders of each open level still to visit (so a wide folder is listed once, not once per subfolder).
    pending: list[list[str]] = [_empty_files(cur)]
    try:
        while True:
            if pending[-1]:
                name = pending[-1].pop()
                with contextlib.suppress(OSError):
                    os.chmod(name, 0o700, dir_fd=cur, follow_symlinks=False)
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=cur)
                except OSError:
                    continue
                st = os.fstat(cur)
                os.close(cur)
                cur = child
                names.append(name)
                parents.append((st.st_dev, st.st_ino))
                pending.append(_empty_files(cur))
                continue
            pending.pop()
            if not names:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=cur)
            st = os.fstat(parent)
            os.close(cur)
            cur = parent
            name, expected = names.pop(), parents.pop()
            if (st.st_dev, st.st_ino) != expected:
                return  # moved while we walked (nothing should run here any more): stop rather than guess
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=cur)
    finally:
        os.close(cur)
    if (top.st_dev, top.st_ino) == _identity(root):
        with contextlib.suppress(OSError):
            os.rmdir(root)


def _empty_files(fd: int) -> list[str]:
    """Unlink every entry of the folder open at ``fd`` that is not a folder; return the names of its subfolders."""
    subdirs: list[str] = []
    try:
        with os.scandir(fd) as it:
            entries = list(it)
    except OSError:
        return subdirs
    for entry in entries:
        try:
            is_dir = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
        except OSError:
            continue
        if is_dir:
            subdirs.append(entry.name)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.name, dir_fd=fd)
    return subdirs


def _identity(path: Path | str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
