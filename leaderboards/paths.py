"""Paths an admin types (a problem folder, a problem-set file), kept inside the server's problems folder."""

from __future__ import annotations

from pathlib import Path

from leaderboards.errors import InvalidChange


def inside(root: Path, text: str) -> Path:
    """A path an admin typed, refused unless it lies inside the problems folder of this server."""
    root = root.resolve()
    path = (root / text).resolve() if not Path(text).is_absolute() else Path(text).resolve()
    if path != root and root not in path.parents:
        raise InvalidChange(f"{text!r} is outside the problems folder ({root}); give a path inside it.", field="path")
    if not path.exists():
        raise InvalidChange(f"{text!r} does not exist in the problems folder ({root}).", field="path")
    return path
