"""The CLI's conventions (issue 15): -h, completion, ``python -m kernelcup``, choices as enums, a light start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelcup.choices import LangChoice, LauncherChoice, ModeChoice, RunDevice
from kernelcup.cli import build_app

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sqlalchemy", "alembic", "torch", "numpy", "fastapi", "starlette", "uvicorn", "discord", "httpx", "yaml")
"""What no command's --help may import: the database layer, the runner's numerics, the web app, the bot."""

HELP_OF_EVERY_COMMAND = """
import json, sys
import click, typer
from kernelcup.cli import build_app

top = typer.main.get_command(build_app())
after_top = None

def walk(command, ctx):
    command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            walk(sub, click.Context(sub, info_name=name, parent=ctx))

top.get_help(click.Context(top, info_name="kernelcup"))
after_top = sorted(sys.modules)
walk(top, click.Context(top, info_name="kernelcup"))
with open(sys.argv[1], "w") as f:
    json.dump({"top": after_top, "all": sorted(sys.modules)}, f)
"""


def _roots(modules: list[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_imports_no_database_runner_web_or_bot(tmp_path: Path) -> None:
    out = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", HELP_OF_EVERY_COMMAND, str(out)],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        check=True,
        capture_output=True,
        timeout=120,
    )
    loaded = json.loads(out.read_text())
    top, every = _roots(loaded["top"]), _roots(loaded["all"])
    assert "kernelcup" in top and "typer" in top
    assert top.isdisjoint({*HEAVY, "pydantic", "pydantic_settings", "runners"}), sorted(top & {*HEAVY, "pydantic"})
    assert every.isdisjoint(HEAVY), f"a command's --help imports {sorted(every & set(HEAVY))}"


def test_python_dash_m_kernelcup_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kernelcup", "-h"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout and "submit" in done.stdout and "leaderboard" in done.stdout


@pytest.mark.parametrize("args", [["-h"], ["run", "-h"], ["leaderboard", "show", "-h"], ["problems", "-h"]])
def test_dash_h_is_help_everywhere(args: list[str]) -> None:
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output and "--help" in result.output and "-h" in result.output


def test_shell_completion_is_offered() -> None:
    result = CliRunner().invoke(build_app(), ["--help"])
    assert "--install-completion" in result.output and "--show-completion" in result.output


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        (["run", "--help"], ["test", "benchmark", "ranked", "profile", "cuda", "cpu"]),
        (["submit", "--help"], ["test", "benchmark", "ranked", "profile"]),
        (["worker", "--help"], ["routed", "local"]),
        (["serve", "--help"], ["routed", "local"]),
        (["bot", "--help"], ["routed", "local"]),
        (["schema", "--help"], ["task", "result"]),
    ],
)
def test_help_lists_the_choices(args: list[str], choices: list[str]) -> None:
    result = CliRunner().invoke(build_app(), args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for choice in choices:
        assert choice in result.output


@pytest.mark.parametrize("args", [["run", "--help"], ["worker", "--help"], ["runners", "check", "--help"]])
def test_help_shows_flags_without_a_value_and_options_with_their_default(args: list[str]) -> None:
    """A newcomer's walk: `run --help` read `--json <bool>`, and `--json true` then took `true` for a file."""
    result = CliRunner().invoke(build_app(), args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    rows = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("│ --")}
    assert rows["--help"].split()[2:4] == ["-h", "Show"]  # a flag's row: its names, then its help
    if "check" in args:
        assert "[default: 600.0]" in rows["--job-timeout"]  # as the README says


def test_a_wrong_choice_is_refused_with_the_list() -> None:
    result = CliRunner().invoke(build_app(), ["worker", "--launcher", "teleport", "--once"])
    assert result.exit_code == 2
    assert "teleport" in result.output and "routed" in result.output and "local" in result.output


def test_the_choices_mirror_the_core() -> None:
    from kernelcup.wiring import LAUNCHER_CHOICES
    from runners.contract import Language, Mode

    assert [m.value for m in ModeChoice if m is not ModeChoice.LEADERBOARD] == [m.value for m in Mode]
    assert {m.mode for m in ModeChoice} == {m.value for m in Mode}  # (leaderboard: popcorn-cli's name of ranked)
    assert [c.value for c in LangChoice] == [lang.value for lang in Language]
    assert tuple(c.value for c in LauncherChoice) == LAUNCHER_CHOICES
    assert {d.value for d in RunDevice} == {"cuda", "cpu"}
