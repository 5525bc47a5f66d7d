"""A job folder is removed whatever a run made in it: folders nested thousands deep, past PATH_MAX, links to outside
it (never followed), folders it made unreadable (issue 37: shutil.rmtree raised RecursionError on a deep one)."""

from __future__ import annotations

import os
from pathlib import Path

from runners.sandbox import remove_tree


def test_a_folder_nested_past_the_recursion_limit_is_removed(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    fd = os.open(job, os.O_RDONLY)
    for i in range(1500):  # (past Python's recursion limit of 1,000, where shutil.rmtree gave up)
        if i % 500 == 0:
            os.close(os.open(f"file{i}", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        os.mkdir("d" * 20, dir_fd=fd)
        child = os.open("d" * 20, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    remove_tree(job)
    assert not job.exists()


def test_wide_folders_unreadable_ones_and_links_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")
    job = tmp_path / "job"
    for i in range(200):
        (job / f"w{i}" / "x").mkdir(parents=True)
        (job / f"w{i}" / "x" / "f").write_text("x")
    (job / "link").symlink_to(outside)
    (job / "w0" / "link").symlink_to(outside / "keep")
    (job / "locked").mkdir()
    (job / "locked" / "f").write_text("x")
    (job / "locked").chmod(0)
    remove_tree(job)
    assert not job.exists()
    assert (outside / "keep").read_text() == "mine"


def test_a_missing_folder_or_a_link_is_no_error(tmp_path: Path) -> None:
    remove_tree(tmp_path / "missing")
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    remove_tree(tmp_path / "link")
    assert not (tmp_path / "link").exists() and (tmp_path / "target" / "f").exists()
