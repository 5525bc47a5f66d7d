"""The checking code references share (``problems/_lib``), and which problems carry it.

kernelcup ships the library beside its packages (``problems/_lib`` in the source tree and the image); it is never
looked up beside a problem set or a problem folder, so ``from _lib import compare`` means the same code for every
set, inside this repository or outside it. Only a problem's own files travel to the runner and the fingerprint
covers exactly them, so a problem whose Python files import ``_lib`` carries the library's files among its own (as
``_lib/<name>``): they go with every run request, lie beside ``reference.py`` in the evaluator's folder, and a change
to them is a change of that problem's check (``sync`` asks for ``--force``). A problem that does not import it does
not carry it, and its fingerprint does not move when the library changes.
"""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath

from leaderboards.problem_files import MAX_FILE_BYTES, FileRefused, read_text

LIB_PACKAGE = "_lib"
PROBLEM_LIB = Path(__file__).resolve().parents[1] / "problems" / LIB_PACKAGE
"""The library's folder: kernelcup's ``problems/_lib``."""


class LibRefused(ValueError):
    """A problem's files and the library do not go together; ``file`` is the file to blame (relative to the problem
    folder, or absolute), ``field`` the field of it."""

    def __init__(self, message: str, *, file: str, field: str = "") -> None:
        super().__init__(message)
        self.file = file
        self.field = field


def imports_lib(source: str) -> bool:
    """Whether Python ``source`` imports ``_lib`` anywhere (at module level or inside a function)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # the reference's own check reports it; another file is the runner's to fail on
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == LIB_PACKAGE for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == LIB_PACKAGE:
            return True
    return False


def bundle_lib(files: dict[str, str]) -> dict[str, str]:
    """``files`` with the library's added (as ``_lib/<name>``) when one of them imports ``_lib``, else as they are.

    The runner only has the library where it was bundled: an import this scan misses (``importlib``) fails loudly
    in ``validate --run``, never silently outside the fingerprint. Raises ``LibRefused``."""
    own = [rel for rel in files if PurePosixPath(rel).parts[:1] == (LIB_PACKAGE,)]
    if own:
        what = f"{', '.join(map(repr, own))}: {LIB_PACKAGE}/ is the name of kernelcup's shared checking code"
        raise LibRefused(f"{what}; give your own files another folder", file="task.yml", field="files")
    users = sorted(rel for rel, text in files.items() if rel.endswith(".py") and imports_lib(text))
    if not users:
        return files
    lib = sorted(PROBLEM_LIB.glob("*.py")) if PROBLEM_LIB.is_dir() else []
    if not lib:
        raise LibRefused(
            f"imports {LIB_PACKAGE}, kernelcup's shared checking code, but {PROBLEM_LIB} has no Python files "
            "(it ships in problems/_lib beside kernelcup's packages: run kernelcup from its source tree or image)",
            file=users[0],
        )
    bundled = dict(files)
    for source in lib:
        try:
            bundled[f"{LIB_PACKAGE}/{source.name}"] = read_text(source, MAX_FILE_BYTES)
        except FileRefused as exc:
            raise LibRefused(f"kernelcup's shared checking code {exc}", file=str(source)) from None
    return bundled
