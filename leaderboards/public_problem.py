"""What of a leaderboard's problem leaves the server: its starter files and its public problem folder.

A competitor may take a board's problem home and run it with the same harness (``kernelcup problems get``,
``kernelcup run -l``, ``GET /api/v1/leaderboards/{name}/problem``). What goes is the folder as its author wrote it,
less what only the server may know: task.yml without the held-out cases (``holdout``, checked only in the
deadline's system tests) and their settings, the files that travel with every run (the reference, harness sources,
the shared ``_lib`` it imports), and the templates. The ranked runs' secret seed is the leaderboard row's, never in
the snapshot, so it cannot leave through here.

Both directions are here: ``public_folder`` builds the file map on the server; ``check_folder`` and
``problem_from_folder`` read one that came back from a server, trusting nothing in it (paths stay inside the folder,
sizes and counts are bounded, task.yml is read with the bounded YAML loader).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from leaderboards.errors import UserError
from leaderboards.problem_files import load_yaml
from leaderboards.problem_lib import LIB_PACKAGE
from leaderboards.problem_rules import MAX_PROBLEM_FILES, MAX_SNAPSHOT_BYTES, MAX_TEMPLATES
from leaderboards.problems import STORED, Problem, Task
from leaderboards.snapshot import TaskSnapshot

SECRET_TASK_FIELDS = ("holdout", "system_test_top", "holdout_timed")
"""task.yml's fields that stay on the server: the held-out cases, how many entries run them and whether they are
timed (a public folder without its held-out cases could not declare them timed)."""
TASK_FILE = "task.yml"
MAX_FOLDER_FILES = 1 + MAX_PROBLEM_FILES + MAX_TEMPLATES + 64
"""The most files a public folder may hold: task.yml, the listed files, the templates and the shared library's."""
MAX_FOLDER_BYTES = 2 * MAX_SNAPSHOT_BYTES
"""The most bytes of text a public folder may hold (a snapshot is at most MAX_SNAPSHOT_BYTES; task.yml as YAML and
the templates' header lines add a little)."""
_C_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp")
_LEADERBOARD_LINE = re.compile(r"^\s*(?:#|//)!\s*(?:kernelcup|popcorn)\s+leaderboard\b", re.IGNORECASE | re.MULTILINE)


class FolderRefused(UserError):
    """A problem folder that came from a server and is not written or run: it says which file and why."""

    code = "problem_folder_refused"


@dataclass(frozen=True)
class PublicFolder:
    """A leaderboard's public problem folder: every file by its path relative to the folder."""

    leaderboard: str
    problem: str
    fingerprint: str
    """sha256 of the files (``folder_fingerprint``): a cached copy with the same one is the same folder."""
    files: dict[str, str]


def served_file_name(leaderboard: str, label: str, original: str) -> str:
    """The name a template is served under: ``NAME_LANG`` with the original's suffix (``vectoradd_pytorch.py``,
    ``vectoradd_cuda_inline.py``, ``vectoradd_cu_cuda.cu``), as popcorn-cli names them."""
    suffix = PurePosixPath(original).suffix or ".txt"
    return f"{leaderboard}_{label.replace('-', '_').replace('.', '_')}{suffix}"


def served_template(leaderboard: str, file_name: str, content: str) -> str:
    """A template as the API, the web, the bot and a fetched folder serve it: it opens with the line that sends a
    copy of it to its leaderboard (``#!POPCORN leaderboard NAME``, ``//!`` in C++ files; read by
    ``leaderboards.directives`` and by popcorn-cli), unless it names a leaderboard already."""
    if _LEADERBOARD_LINE.search(content):
        return content
    mark = "//!" if PurePosixPath(file_name).suffix in _C_SUFFIXES else "#!"
    return f"{mark}POPCORN leaderboard {leaderboard}\n{content}"


def public_task(task: Task) -> dict[str, Any]:
    """A stored task.yml as JSON, without the fields that stay on the server."""
    return task.model_dump(mode="json", exclude=set(SECRET_TASK_FIELDS))


def folder_fingerprint(files: dict[str, str]) -> str:
    blob = json.dumps(files, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def public_folder(leaderboard: str, stored: Mapping[str, Any]) -> PublicFolder:
    """The public folder of a leaderboard whose stored snapshot (``Leaderboard.task``) is ``stored``: task.yml
    (without ``holdout``), the files that travel (``_lib/`` among them where the reference imports it) and the
    templates, each starting with its leaderboard line. Raises ``SnapshotError`` for a snapshot that does not read."""
    snap = TaskSnapshot.load(stored)
    files = {TASK_FILE: yaml.safe_dump(public_task(snap.task), sort_keys=False, allow_unicode=True)}
    files.update(snap.files)
    for label, content in snap.templates.items():
        rel = snap.task.templates.get(label)
        if rel and rel not in files:
            files[rel] = served_template(leaderboard, rel, content)
    return PublicFolder(leaderboard, snap.problem, folder_fingerprint(files), files)


def _path_issue(rel: str) -> str | None:
    path = PurePosixPath(rel)
    if not rel or "\\" in rel or "\x00" in rel or path.is_absolute():
        return "is not a relative path"
    if any(part in ("", ".", "..") or part.startswith(".") for part in rel.split("/")):
        return "leaves the folder or names a hidden file"
    return None


def check_folder(files: object) -> dict[str, str]:
    """A file map that came from a server, checked before anything is written or run: at most MAX_FOLDER_FILES files
    of text, MAX_FOLDER_BYTES in all, each path relative and inside the folder, task.yml among them."""
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise FolderRefused("the server's answer is not a map of file paths to text")
    if len(files) > MAX_FOLDER_FILES:
        raise FolderRefused(f"the folder has {len(files)} files; at most {MAX_FOLDER_FILES} are taken")
    size = sum(len(text.encode()) for text in files.values())
    if size > MAX_FOLDER_BYTES:
        raise FolderRefused(f"the folder holds {size:,} bytes; at most {MAX_FOLDER_BYTES:,} are taken")
    for rel in files:
        issue = _path_issue(rel)
        if issue:
            raise FolderRefused(f"the file {rel!a} {issue}; nothing was written")
    if TASK_FILE not in files:
        raise FolderRefused(f"the folder has no {TASK_FILE}")
    return dict(files)


def problem_from_folder(name: str, files: dict[str, str]) -> Problem:
    """The problem a public folder describes, run as the server runs it: its own files (its ``_lib`` too, not this
    machine's), task.yml read with the bounded loader and validated as a stored task. Raises ``FolderRefused``."""
    files = check_folder(files)
    try:
        task = Task.model_validate(load_yaml(files[TASK_FILE]), context=STORED)
    except (ValueError, yaml.YAMLError) as exc:  # pydantic's ValidationError is a ValueError
        raise FolderRefused(f"{TASK_FILE} is not a valid task: {exc}") from None
    travelling = [*task.files, *sorted(rel for rel in files if PurePosixPath(rel).parts[0] == LIB_PACKAGE)]
    missing = [rel for rel in [*task.files, *task.templates.values()] if rel not in files]
    if missing:
        raise FolderRefused(f"the folder lacks {', '.join(missing)}, which {TASK_FILE} lists")
    return Problem(
        path=Path(name),
        task=task,
        files={rel: files[rel] for rel in travelling},
        templates={label: files[rel] for label, rel in task.templates.items()},
    )
