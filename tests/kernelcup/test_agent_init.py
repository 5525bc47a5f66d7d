"""``kernelcup agent init PROBLEM``: AGENTS.md and the starter, from a leaderboard on a served kernelcup or from a
problem folder on this machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from served import TEMPLATE, Served, served_kernelcup
from typer.testing import CliRunner

from kernelcup.cli import build_app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_kernelcup(tmp_path_factory.mktemp("agent")) as s:
        yield s


def invoke(*args: str, env: dict[str, str]) -> object:
    return CliRunner().invoke(build_app(), ["agent", "init", *args], env=env)


def said(result: object) -> str:
    """The command's output on one line, without the boxes a usage error is drawn in."""
    return " ".join(result.output.replace("│", " ").split())  # type: ignore[attr-defined]


def test_from_a_leaderboard_on_the_server(served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"KERNELCUP_SERVER": served.url, "KERNELCUP_TOKEN": served.token,
           "KERNELCUP_CONFIG_DIR": str(tmp_path / "config")}  # fmt: skip
    r = invoke("add", "-d", "cpu", env=env)
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    assert "wrote AGENTS.md, submission.py for add" in r.output  # type: ignore[attr-defined]
    guide = (tmp_path / "AGENTS.md").read_text()
    assert (tmp_path / "submission.py").read_text() == f"#!POPCORN leaderboard add\n{TEMPLATE}"  # the served one
    assert guide.startswith("# Agent guide: add\n")
    assert "Add two vectors: return a + b." in guide  # what to implement: the problem's own description
    assert "`size=3, seed=3`" in guide  # its test cases
    assert "kernelcup submit submission.py -l add -d cpu -m test" in guide
    assert "kernelcup submit submission.py -l add -d cpu -m benchmark" in guide
    assert "kernelcup submit submission.py -l add -d cpu -m ranked" in guide
    assert f"(the server: {served.url})" in guide and "kernelcup mcp" in guide
    assert "caching or reusing an output across calls" in guide and "trusted side" in guide
    assert "**speedups** over reference" in guide and "geometric mean" in guide
    (tmp_path / "submission.py").write_text("# mine\n")
    r = invoke("add", env=env)
    assert r.exit_code == 1 and "AGENTS.md exists here; pass --force" in r.output  # type: ignore[attr-defined]
    r = invoke("add", "--force", env=env)
    assert r.exit_code == 0 and "wrote AGENTS.md for add" in r.output  # type: ignore[attr-defined]
    assert (tmp_path / "submission.py").read_text() == "# mine\n"  # the agent's work is never overwritten
    assert "-d cpu" in (tmp_path / "AGENTS.md").read_text()  # no device named: the leaderboard's first
    r = invoke("nope", "--force", env=env)
    assert r.exit_code == 1 and "There is no leaderboard named 'nope'" in r.output  # type: ignore[attr-defined]


def test_from_a_problem_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"KERNELCUP_SERVER": "", "KERNELCUP_CONFIG_DIR": str(tmp_path / "config")}
    folder = REPO / "problems" / "vectoradd"
    r = invoke(str(folder), "--language", "triton", env=env)
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    guide = (tmp_path / "AGENTS.md").read_text()
    assert (tmp_path / "submission.py").read_text() == (folder / "templates" / "triton.py").read_text()
    assert "Add two fp16 matrices" in guide and "`size=16384, seed=4323`" in guide
    assert f"kernelcup run {folder} submission.py -m benchmark" in guide
    assert "the problem's\n`triton` template" in guide
    r = invoke(str(folder), "--language", "fortran", "--force", env=env)
    assert r.exit_code == 2 and "no fortran template; there are: pytorch, triton" in said(r)  # type: ignore[attr-defined]
    r = invoke("vectoradd", "--force", env=env)  # not a folder here, and no server: it says what to do
    assert r.exit_code == 2 and "`kernelcup login --server URL`, or --server" in said(r)  # type: ignore[attr-defined]
