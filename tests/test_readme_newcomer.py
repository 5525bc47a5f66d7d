"""What a newcomer's walk through the README found missing (2026-11-29), kept: how `kernelcup` gets on PATH before
the first command that uses it, every template label the problems use in the layout's list, the light client's
install from this repository (it is not on PyPI), and docs/api.md's code paths."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_says_how_kernelcup_gets_on_path_before_using_it() -> None:
    first_use = README.index("\nkernelcup run ")  # the first quick start's first command
    assert -1 < README.find(". .venv/bin/activate") < first_use


def test_the_layout_lists_every_template_label_the_problems_use() -> None:
    used = set()
    for task in REPO.glob("problems/*/task.yml"):
        used |= set((yaml.safe_load(task.read_text(encoding="utf-8")) or {}).get("templates") or {})
    start = README.index("  templates/          #")
    listed = README[start : README.index("\n  solutions/", start) + 1]
    assert used and not {label for label in used if not re.search(rf"[ :,]{re.escape(label)}[,\s]", listed)}


def test_the_light_client_installs_from_the_repository() -> None:
    assert (REPO / "kernelcup/client/pyproject.toml").is_file()
    for doc in ("README.md", "docs/agents.md"):
        text = (REPO / doc).read_text(encoding="utf-8")
        assert "pip install ./kernelcup/client" in text, doc
        assert not re.search(r"^pip install kernelcup-client", text, flags=re.MULTILINE), doc  # not on PyPI
    assert "not on PyPI yet" in README


def test_docs_api_names_code_that_exists() -> None:
    text = (REPO / "docs/api.md").read_text(encoding="utf-8")
    code = text.split("Code: ", 1)[1].split("\n\n", 1)[0]
    for path in re.findall(r"`((?:web|leaderboards|kernelcup)/[^`{]*)`", code):
        assert (REPO / path).exists(), path
