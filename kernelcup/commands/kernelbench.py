"""`kernelcup problems import-kernelbench FILE... [--out DIR] [--set NAME.yaml]`: KernelBench-style tasks as problem
folders (``leaderboards.kernelbench``), and optionally a problem set listing them.

Registered into the ``problems`` group that ``kernelcup.commands.problems`` makes, so ``cli.py`` names this module
after that one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer

from kernelcup.commands.common import user_errors
from kernelcup.commands.text import safe


def _problems_group(app: typer.Typer) -> typer.Typer:
    for group in app.registered_groups:
        if group.name == "problems" and group.typer_instance is not None:
            return group.typer_instance
    raise RuntimeError("register kernelcup.commands.problems before kernelcup.commands.kernelbench")


def register(app: typer.Typer) -> None:
    problems_app = _problems_group(app)

    @problems_app.command("import-kernelbench")
    def import_cmd(
        files: list[Path] = typer.Argument(..., help="KernelBench-style task files (Model, get_inputs, ...)."),
        out: Path = typer.Option(Path("problems"), "--out", help="The folder the problem folders are written in."),
        set_file: str | None = typer.Option(
            None, "--set", help="Also write a problem set of this file name in --out, listing every imported problem."
        ),
        devices: str = typer.Option("cpu", "--devices", help="The problem set's devices, comma-separated."),
        deadline: str | None = typer.Option(None, "--deadline", help="The problem set's deadline (default: a year)."),
        force: bool = typer.Option(False, "--force", help="Overwrite the files of problem folders that exist."),
    ) -> None:
        """Turn KernelBench-style task files into problem folders: reference, cases, tolerance, a ModelNew template."""
        import yaml

        from leaderboards.kernelbench import import_tasks

        if set_file and deadline:
            try:
                datetime.fromisoformat(deadline)
            except ValueError:
                raise typer.BadParameter(
                    f"{deadline!r} is not a date; give one like 2027-01-31 or 2027-01-31T18:00Z",
                    param_hint="--deadline",
                ) from None
        with user_errors():
            done = import_tasks(files, out, force=force)
        for item in done:
            shapes = ", ".join(f"{k}={v}" for k, v in item.shapes.items())
            typer.echo(f"{safe(str(item.source))} -> {safe(str(item.folder))} ({shapes}; {item.test_cases} tests)")
        target = str(out)
        if set_file:
            when = deadline or (datetime.now(UTC) + timedelta(days=365)).strftime("%Y-%m-%d")
            names = [d.strip() for d in devices.split(",") if d.strip()]
            entries = [{"directory": i.folder.name, "deadline": when, "devices": names} for i in done]
            path = out / set_file
            problem_set = {"name": Path(set_file).stem, "problems": entries}
            try:
                path.write_text(yaml.safe_dump(problem_set, sort_keys=False, default_flow_style=None), encoding="utf-8")
            except OSError as exc:
                raise typer.BadParameter(
                    f"cannot write the problem set {safe(str(path))}: {exc.strerror or exc}; the problem folders are "
                    f"written, give --set a name that can be written in {safe(str(out))}",
                    param_hint="--set",
                ) from None
            target = str(path)
            typer.echo(f"wrote the problem set {safe(target)}")
        typer.echo(f"imported {len(done)} task(s); check them with: kernelcup problems validate --run {safe(target)}")
