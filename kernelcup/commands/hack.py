"""`kernelcup problems hack PROBLEM FILE... --case JSON`: try an input hack (issue 35) on this machine: the case is
checked against the problem's ``hack_space``, the reference runs on it, then each kernel file (``leaderboards.hacks``),
sandboxed on the CPU.

Registered into the ``problems`` group that ``kernelcup.commands.problems`` makes, so ``cli.py`` names this module
after that one.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from kernelcup.commands.common import user_errors
from kernelcup.commands.kernelbench import _problems_group
from kernelcup.commands.text import safe


def register(app: typer.Typer) -> None:
    problems_app = _problems_group(app)

    @problems_app.command("hack")
    def hack_cmd(
        problem_dir: Path = typer.Argument(..., help="The problem folder (its task.yml declares a hack_space)."),
        files: list[Path] = typer.Argument(..., help="Kernel files to try the case on (Python submissions)."),
        case: str = typer.Option(
            ..., "--case", help='The case, a JSON object of generate_input\'s parameters: \'{"rows": 3, "cols": 33}\'.'
        ),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Try an input hack: check the case against the problem's hack_space, run the reference on it, then each
        file (correctness only, sandboxed, on the CPU). Exit status 0 where no file broke; 1 where one broke (it
        failed where the reference passed) or the hack is refused (outside the hack_space, or the reference fails
        on it: the message names each field)."""
        from leaderboards.hacks import try_hack
        from leaderboards.problems import load_problem

        try:
            parsed = json.loads(case)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"not JSON ({exc.msg} at character {exc.pos})", param_hint="--case") from None
        for path in files:
            if not path.is_file():
                raise typer.BadParameter(f"{path} is not a file", param_hint="FILES")
        with user_errors():
            from kernelcup.settings import load
            from runners.entry import run_request
            from runners.settings import RunnerSettings

            problem = load_problem(problem_dir.resolve())  # "." names its folder
            settings = load(RunnerSettings)
            entries = [(path.name, path.read_bytes()) for path in files]
            report = try_hack(problem, parsed, entries, lambda request: run_request(request, settings=settings))
        if json_out:
            outcomes = [
                {"file": e.name, "verdict": e.verdict.value, "broken": e.broken, "message": e.message}
                for e in report.entries
            ]
            typer.echo(json.dumps({"problem": report.problem, "case": report.case, "entries": outcomes}, indent=2))
        else:
            from rich.console import Console

            console = Console()
            console.print(f"hack {safe(json.dumps(report.case))} on {safe(report.problem)}: the reference passes")
            for e in report.entries:
                mark = "[red]broken[/red]" if e.broken else ("holds" if e.verdict.passed else "not judged")
                console.print(f"  {safe(e.name)}: {mark} ({safe(e.verdict.label)}) {safe(e.message[:300])}")
        if report.broken:
            raise typer.Exit(1)
