"""``--output FILE``: a command's result written to a file instead of the terminal (popcorn-cli's habit).

What the command would print on stdout (its report as text, or its JSON with ``--json``) goes to the file; progress,
warnings and errors stay on stderr. Rich consoles and ``print_json`` both write to ``sys.stdout`` as it is when they
print, so redirecting it covers every renderer without passing a file through them.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import typer


@contextlib.contextmanager
def output_to(path: Path | None) -> Iterator[None]:
    """Send stdout to ``path`` while the block runs (nothing changes when it is None). The file is kept even when the
    command ends in a failing exit status (a failed run's report is a result too), and removed when the command
    wrote nothing to it (it failed before there was a result)."""
    if path is None:
        yield
        return
    if path.is_dir():
        raise typer.BadParameter(f"{path} is a folder; name the file to write the result to", param_hint="--output")
    try:
        stream = path.open("w", encoding="utf-8")
    except OSError as exc:
        raise typer.BadParameter(f"cannot write {path}: {exc.strerror or exc}", param_hint="--output") from None
    try:
        with stream, contextlib.redirect_stdout(stream):
            yield
    finally:
        if path.stat().st_size:
            print(f"wrote the result to {path}", file=sys.stderr)
        else:
            path.unlink()
