"""Paths an admin types (a problem folder, a problem-set file), kept inside the server's problems folder."""

from __future__ import annotations

from pathlib import Path

from leaderboards.errors import InvalidChange


def inside(root: Path, text: str) -> Path:
    """A path an admin typed, refused unless it lies inside the problems folder of this server."""
    root = root.resolve()
    shown = repr(text[:200]) + ("…" if len(text) > 200 else "")
    try:
        path = (root / text).resolve() if not Path(text).is_absolute() else Path(text).resolve()
        if path != root and root not in path.parents:
            raise InvalidChange(
                f"{shown} is outside the problems folder ({root}); give a path inside it.", field="path"
            )
        exists = path.exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte: no such file, not a 500
        exists = False
    if not exists:
        raise InvalidChange(f"{shown} does not exist in the problems folder ({root}).", field="path")
    return path
