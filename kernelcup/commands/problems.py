"""`kernelcup problems validate|sync`: check problem folders and sets; turn a problem set into leaderboards.

Both run the same checks; ``validate --run`` and ``sync`` (unless ``--skip-run``) also run each problem's reference
on every test case in the sandbox on the CPU (``kernelcup.wiring.reference_check``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kernelcup.commands.common import open_service, print_json, user_errors
from kernelcup.commands.text import safe

if TYPE_CHECKING:
    from rich.table import Table

    from leaderboards.problems import FormatIssue, Problem
    from leaderboards.sync import ReferenceCheck, SyncReport

DEFAULT_PROBLEMS = Path("problems")
DEFAULT_SET = DEFAULT_PROBLEMS / "starter.yaml"

ReferenceCheckFactory = Callable[[], "ReferenceCheck"]
"""Builds the reference check when a command needs it (reads the runner's settings then, not at start-up)."""


def _warn(warnings: tuple[FormatIssue, ...]) -> None:
    for warning in warnings:
        typer.secho(f"warning: {warning}", fg=typer.colors.YELLOW, err=True)


def _announce(problem: Problem, case: dict) -> None:
    typer.echo(f"running the reference of {problem.path} on {case} …", err=True)


def _sync_table(path: Path, report: SyncReport) -> Table:
    from rich.table import Table

    from leaderboards.results import SyncAction

    table = Table(title=f"sync {safe(path)}")
    for col in ("leaderboard", "action", "details"):
        table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
    for item in report.items:
        details = "; ".join(item.reasons) or ", ".join(item.changed)
        if item.ranking_reset:
            details += " (ranking reset)"
        action = item.action.value if report.applied or item.action is SyncAction.NEEDS_FORCE else "not applied"
        style = "red" if item.action is SyncAction.NEEDS_FORCE else None
        table.add_row(safe(item.leaderboard), action, safe(details), style=style)
    return table


def applied_text(report: SyncReport) -> str:
    """One line: what the sync changed in the database (nothing, when an entry needs --force)."""
    from leaderboards.results import SyncAction

    if not report.applied:
        return "nothing was applied"
    counts = {a: sum(1 for i in report.items if i.action is a) for a in SyncAction}
    parts = [f"{counts[a]} {a.value}" for a in (SyncAction.CREATED, SyncAction.UPDATED, SyncAction.UNCHANGED)]
    return "applied: " + ", ".join(parts)


def register(app: typer.Typer, *, reference_check: ReferenceCheckFactory | None = None) -> None:
    """``reference_check``: how to build the reference check (default ``kernelcup.wiring.reference_check``)."""
    problems_app = typer.Typer(help="Problem folders and problem sets.", no_args_is_help=True)
    app.add_typer(problems_app, name="problems")

    def build_check() -> ReferenceCheck:
        if reference_check is not None:
            return reference_check()
        from kernelcup.wiring import reference_check as default

        return default()

    def device_check():  # type: ignore[no-untyped-def]
        from kernelcup.wiring import device_check as routed

        return routed()

    @problems_app.command("validate")
    def validate_cmd(
        path: Path = typer.Argument(
            DEFAULT_PROBLEMS, help="A problem folder, a problem-set file, or a folder of them."
        ),
        run: bool = typer.Option(
            False,
            "--run",
            help="Also run each problem's reference on every test case (sandboxed, on the CPU): "
            "generate_input -> ref_kernel -> check_implementation must pass, and the check must refuse None; each "
            "benchmark case's inputs are generated once and its speed_of_light checked too.",
        ),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Check problems and problem sets; print every error with its file, field and what was expected."""
        from leaderboards.sync import validate_path

        with user_errors():
            check = build_check() if run else None
            report = validate_path(
                path, check=check, device_check=device_check(), on_check=None if json_out else _announce
            )
        if json_out:
            print_json(report)
        else:
            for issue in report.issues:
                typer.secho(str(issue), fg=typer.colors.RED, err=True)
            _warn(report.warnings)
            if report.ok:
                ran = f", {len(report.checked)} reference(s) passed their own check" if run else ""
                typer.echo(f"ok: {len(report.problems)} problem(s), {len(report.problem_sets)} problem set(s){ran}")
            else:
                typer.secho(f"{len(report.issues)} error(s)", fg=typer.colors.RED, err=True)
        if not report.ok:
            raise typer.Exit(1)

    @problems_app.command("sync")
    def sync_cmd(
        path: Path = typer.Argument(DEFAULT_SET, help="The problem-set file."),
        force: bool = typer.Option(
            False,
            "--force",
            help="Apply changes that make old scores incomparable (the ranking starts over), and take over "
            "leaderboards another problem set created.",
        ),
        skip_run: bool = typer.Option(
            False,
            "--skip-run",
            help="Do not run the references of new or changed problems (by default each must pass its own check "
            "on every test case, and generate each benchmark case's inputs, first).",
        ),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Create or update one leaderboard per problem of a problem set, all in one transaction."""
        from rich.console import Console

        from leaderboards.sync import sync_problem_set

        with user_errors():
            if not path.is_file():
                raise typer.BadParameter(f"{path} is not a file; pass the problem-set YAML to sync", param_hint="PATH")
            check = None if skip_run else build_check()
            report = sync_problem_set(
                open_service(),
                path,
                force=force,
                check=check,
                device_check=device_check(),
                on_check=None if json_out else _announce,
            )
        if json_out:
            print_json(report)
        else:
            _warn(report.warnings)
            if report.checked:
                typer.echo(f"references passed their own check: {', '.join(report.checked)}", err=True)
            Console().print(_sync_table(path, report))
            typer.echo(applied_text(report))
        if report.refused:
            typer.secho(
                f"not applied: {', '.join(i.leaderboard for i in report.refused)} need(s) --force "
                f"({'; '.join(r for i in report.refused for r in i.reasons)}). Nothing in the set was changed; "
                "re-run with --force to apply it all (rankings of changed benchmarks or references start over)",
                fg=typer.colors.RED,
                err=True,
            )
            raise typer.Exit(1)
