"""The console script loads lazily (issue 32): ``kernelcup --help``, ``--version`` and ``version`` import no command
module and nothing heavy, a command imports its own modules only, and the lazy CLI lists and runs exactly what
``build_app`` (every module registered at once) does."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer import _click as click  # Typer 0.29's own click
from typer.core import TyperGroup
from typer.testing import CliRunner

from kernelcup.cli import COMMAND_MODULES, TOP_LEVEL, LazyGroup, build_app, lazy_app

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "numpy", "fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "discord", "httpx")
"""What a start that runs no command must not import: the runner's numerics, the web app, the database layer, the
bot, the HTTP client. Nor pydantic, unless a command is invoked (Typer 0.29 imports it to convert parameters)."""

MODULES_AFTER = """
import json, runpy, sys
sys.argv = ["kernelcup", *sys.argv[2:]]
try:
    runpy.run_module("kernelcup", run_name="__main__")
except SystemExit:
    pass  # 0, or 2 for no arguments (the help)
with open(OUT, "w") as f:
    json.dump(sorted(sys.modules), f)
"""


def modules_after(tmp_path: Path, *args: str) -> set[str]:
    """The modules ``python -m kernelcup ARGS`` has imported when it is done, in a fresh process."""
    out = tmp_path / "modules.json"
    script = MODULES_AFTER.replace("OUT", repr(str(out)))
    subprocess.run(
        [sys.executable, "-c", script, "kernelcup", *args],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        check=True,
        capture_output=True,
        timeout=120,
    )
    return set(json.loads(out.read_text()))


def command_modules(modules: set[str]) -> set[str]:
    return {m.removeprefix("kernelcup.commands.") for m in modules if m.startswith("kernelcup.commands.")}


@pytest.mark.parametrize("args", [["--help"], ["-h"], [], ["--version"], ["version"]], ids=" ".join)
def test_a_start_that_runs_no_command_imports_none(tmp_path: Path, args: list[str]) -> None:
    loaded = modules_after(tmp_path, *args)
    assert "kernelcup.cli" in loaded
    heavy = sorted({m.split(".")[0] for m in loaded} & {*HEAVY, *(() if args == ["version"] else ("pydantic",))})
    assert not heavy, f"kernelcup {' '.join(args)} imports {heavy}"
    assert not command_modules(loaded) & set(COMMAND_MODULES), sorted(command_modules(loaded))


def test_a_command_imports_its_own_modules_only(tmp_path: Path) -> None:
    loaded = command_modules(modules_after(tmp_path, "run", "--help")) & set(COMMAND_MODULES)
    assert loaded == {"run"}
    loaded = command_modules(modules_after(tmp_path, "leaderboard", "--help")) & set(COMMAND_MODULES)
    assert loaded == set(TOP_LEVEL["leaderboard"].modules)
    assert "torch" not in modules_after(tmp_path, "submit", "--help")


def first_paragraph(help_text: str | None) -> str:
    return inspect.cleandoc(help_text or "").split("\n\n")[0]


def test_the_lazy_cli_lists_what_build_app_makes() -> None:
    """``TOP_LEVEL`` (what ``--help`` shows before any module is imported) is what the modules make: the same
    commands, in the same order, each a group or not as it is, with the first paragraph of its own help."""
    eager = typer.main.get_command(build_app())
    lazy = typer.main.get_command(lazy_app())
    assert isinstance(eager, TyperGroup) and isinstance(lazy, LazyGroup)
    ctx = click.Context(eager, info_name="kernelcup")
    names = eager.list_commands(ctx)
    missing = [n for n in names if n not in TOP_LEVEL and n != "version"]
    assert not missing, f"add to kernelcup.cli.TOP_LEVEL: {missing} (and its module to COMMAND_MODULES)"
    assert lazy.list_commands(click.Context(lazy, info_name="kernelcup")) == names
    for name in TOP_LEVEL:
        real = eager.get_command(ctx, name)
        assert real is not None
        want = first_paragraph(real.help)
        assert TOP_LEVEL[name].help == want, f"TOP_LEVEL[{name!r}].help should read {want!r}"
        assert TOP_LEVEL[name].group == isinstance(real, TyperGroup), name
        loaded = lazy.load(name)
        assert type(loaded) is type(real) and loaded.help == real.help
        if isinstance(real, TyperGroup):
            assert isinstance(loaded, TyperGroup)
            assert loaded.list_commands(ctx) == real.list_commands(ctx), name
    assert set(sum((top.modules for top in TOP_LEVEL.values()), ())) == set(COMMAND_MODULES)


@pytest.mark.parametrize(
    "args", [["--help"], ["leaderboard", "--help"], ["leaderboard", "standings", "-h"], ["problems"], ["nosuch"]]
)
def test_the_lazy_cli_answers_as_build_app_does(args: list[str]) -> None:
    runner = CliRunner()
    eager = runner.invoke(build_app(), args, prog_name="kernelcup", terminal_width=100)
    lazy = runner.invoke(lazy_app(), args, prog_name="kernelcup", terminal_width=100)
    assert (lazy.exit_code, lazy.output) == (eager.exit_code, eager.output)


def test_the_lazy_cli_runs_a_command() -> None:
    result = CliRunner().invoke(lazy_app(), ["schema", "--help"], prog_name="kernelcup")
    assert result.exit_code == 0 and "JSON Schema" in result.output
    result = CliRunner().invoke(lazy_app(), ["version"], prog_name="kernelcup")
    assert result.exit_code == 0 and result.output.startswith("kernelcup ") and "run contract v" in result.output
