"""Public problem folders fetched from a server (``kernelcup problems get``, ``kernelcup run -l``), cached by their
fingerprint in the user's cache directory (``KERNELCUP_CACHE_DIR`` moves it).

A fetch sends the fingerprint of the copy it holds; the server answers 304 when that copy is current, so a board's
files cross the network once per change. Without a server configured the folder comes from the local database. A
server that cannot be reached leaves the cached copy in use, with a warning. Everything that came from a server is
checked (``leaderboards.public_problem.check_folder``) before a byte of it is written, and read back with the same
checks and its fingerprint compared before it is run.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from kernelcup.remote import Login, client_for
from leaderboards.problem_files import FileRefused, read_text
from leaderboards.public_problem import (
    MAX_FOLDER_FILES,
    FolderRefused,
    PublicFolder,
    check_folder,
    folder_fingerprint,
)

LATEST = "latest"
"""The file beside a board's cached copies that names the newest one's fingerprint."""


def cache_root() -> Path:
    configured = os.environ.get("KERNELCUP_CACHE_DIR")
    if configured:
        return Path(configured).expanduser() / "problems"
    from platformdirs import user_cache_path

    return user_cache_path("kernelcup", appauthor=False) / "problems"


def board_dir(server: str, leaderboard: str) -> Path:
    """Where one server's board is cached: ``<cache>/problems/<host_port>/<leaderboard>``."""
    where = urlsplit(server)
    host = re.sub(r"[^A-Za-z0-9.-]", "_", where.netloc or server)
    return cache_root() / host / re.sub(r"[^A-Za-z0-9_-]", "_", leaderboard)


def write_folder(dest: Path, files: dict[str, str]) -> None:
    """Write a checked file map into ``dest`` (created; files of the same names are replaced)."""
    for rel, text in check_folder(files).items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():  # never write through a link the folder already had
            path.unlink()
        path.write_text(text, encoding="utf-8")


def read_folder(folder: Path) -> dict[str, str]:
    """The files of a folder written by ``write_folder``: regular files only, bounded like a fetched folder."""
    files: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        if len(files) >= MAX_FOLDER_FILES:
            raise FolderRefused(f"{folder} holds more than {MAX_FOLDER_FILES} files")
        try:
            files[path.relative_to(folder).as_posix()] = read_text(path, 1 << 22)
        except FileRefused as exc:
            raise FolderRefused(f"{path} {exc}") from None
    return files


def same_files(folder: Path, files: dict[str, str]) -> bool:
    """Whether ``folder`` holds exactly ``files`` (a folder too large to read holds something else)."""
    try:
        return read_folder(folder) == files
    except FolderRefused:
        return False


def _cached(board: Path) -> PublicFolder | None:
    """The newest cached copy of a board, or None (none, or one that no longer matches its fingerprint)."""
    try:
        fingerprint = (board / LATEST).read_text(encoding="utf-8").strip()
        copy = board / fingerprint
        (problem,) = [p for p in copy.iterdir() if p.is_dir()]
        files = read_folder(problem)
    except (OSError, ValueError):  # (none, or not the one folder a copy holds)
        return None
    if folder_fingerprint(files) != fingerprint:  # edited or cut short: fetched again
        return None
    return PublicFolder(board.name, problem.name, fingerprint, files)


def _store(board: Path, folder: PublicFolder) -> Path:
    """Keep ``folder`` as ``<board>/<fingerprint>/<problem>/`` (written aside, then moved in whole) and mark it the
    newest; returns the problem folder."""
    copy = board / folder.fingerprint
    if not copy.is_dir():
        board.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=board))
        try:
            write_folder(staging / folder.problem, folder.files)
            staging.rename(copy)
        except OSError:
            if not copy.is_dir():  # (another fetch moved the same copy in first: that one is as good)
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    (board / LATEST).write_text(folder.fingerprint, encoding="utf-8")
    return copy / folder.problem


def fetch_folder(
    login: Login | None, leaderboard: str, *, warn: Callable[[str], None]
) -> tuple[PublicFolder, Path | None]:
    """A board's public folder and where its cached copy lies (None: from the local database, not cached).

    From a server: the cached copy when the server says it is current (or cannot be reached: ``warn`` says so),
    else the server's, checked and cached. Raises ``ApiError`` (unknown or hidden board, no cached copy of an
    unreachable server), ``FolderRefused`` or a core error."""
    if login is None:
        from kernelcup.commands.common import open_service

        return open_service().public_folder(leaderboard), None
    from kernelcup.client import ApiError

    board = board_dir(login.server, leaderboard)
    cached = _cached(board)
    try:
        with client_for(login) as client:
            answer = client.problem_folder(leaderboard, fingerprint=cached.fingerprint if cached else None)
    except ApiError as exc:
        if exc.code != "unreachable" or cached is None:
            raise
        warn(f"{exc.message}; using the copy of {leaderboard} cached in {board}")
        return cached, board / cached.fingerprint / cached.problem
    if answer is None and cached is not None:
        return cached, board / cached.fingerprint / cached.problem
    if answer is None:
        raise FolderRefused(f"{login.server} answered that an unknown copy of {leaderboard} is current")
    files = check_folder(answer.files)
    if folder_fingerprint(files) != answer.fingerprint:
        raise FolderRefused(f"the folder {login.server} sent does not match its own fingerprint; try again")
    if answer.leaderboard != leaderboard or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", answer.problem):
        answered = f"{answer.leaderboard!a} ({answer.problem!a})"
        raise FolderRefused(f"{login.server} answered for {answered}, not for {leaderboard}")
    folder = PublicFolder(answer.leaderboard, answer.problem, answer.fingerprint, files)
    return folder, _store(board, folder)
