"""The sandbox's view of read-only paths, attacked (docs/redteam-2026-11-23.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.entry.session import REPO_ROOT, _env, _ro_python
from runners.sandbox import view


def test_secret_files_below_the_top_of_a_read_only_path_are_hidden(run_py, sandboxed: None, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "runners").mkdir(parents=True)
    (repo / "runners" / "harness.py").write_text("HARNESS = 1\n")
    for rel, text in {
        "deploy/.env": "DISCORD_TOKEN=nested-dotenv\n",
        "data/kernelcup.db": "nested-database\n",
        "web/.env.production": "DATABASE_URL=nested-dotenv-prod\n",
        "ops/runner.pem": "nested-private-key\n",
    }.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    out = run_py(
        f"""
        import os
        for root, _, files in os.walk({str(repo)!r}):
            for name in files:
                try:
                    print(name, open(os.path.join(root, name)).read().strip())
                except OSError as exc:
                    print(name, 'denied', type(exc).__name__)
        """,
        ro_paths=(repo,),
    )
    assert "HARNESS = 1" in out.stdout  # the read-only path itself is visible
    for secret in ("nested-dotenv", "nested-database", "nested-dotenv-prod", "nested-private-key"):
        assert secret not in out.stdout, out.stdout


def test_the_runners_view_holds_only_the_runners_package_of_a_checkout() -> None:
    view = _ro_python()
    assert REPO_ROOT / "runners" in view
    assert REPO_ROOT not in view  # problem sets, data folders, settings files and the other layers stay outside
    assert not any(p in view for p in (REPO_ROOT / "leaderboards", REPO_ROOT / "bot", REPO_ROOT / "web"))


def test_a_read_only_path_too_large_to_vet_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_text("x")
    monkeypatch.setattr(view, "MAX_WALKED_ENTRIES", 3)
    with pytest.raises(view.UnvettedPath, match="more than 3 entries"):
        view._masks(tmp_path)


def test_a_working_directory_on_sys_path_is_not_bound_into_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m kernelcup run ...`` puts its working directory on ``sys.path``; it was bound read-only into both
    sandboxes and named on their PYTHONPATH, so a submission read whatever lay there (a ``settings.toml`` with a
    token, red team 2026-11-24). Only folders with code to import are bound: the interpreter's, site folders (pip's
    metadata) and a checkout's ``runners`` package."""
    cwd = tmp_path / "operator"
    cwd.mkdir()
    (cwd / "settings.toml").write_text("TOKEN = 'secret'\n")
    site = tmp_path / "site"
    (site / "pkg-1.0.dist-info").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(cwd))
    monkeypatch.syspath_prepend(str(site))
    ro = _ro_python()
    assert cwd.resolve() not in ro and site.resolve() in ro
    assert str(cwd.resolve()) not in _env({}, "cpu")["PYTHONPATH"].split(":")
