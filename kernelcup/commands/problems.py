"""`kernelcup problems validate|sync`: check problem folders and sets; turn a problem set into leaderboards."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from kernelcup.commands.common import open_service, print_json, user_errors
from leaderboards.sync import SyncAction, sync_problem_set, validate_path

DEFAULT_PROBLEMS = Path("problems")
DEFAULT_SET = DEFAULT_PROBLEMS / "starter.yaml"


def register(app: typer.Typer) -> None:
    problems_app = typer.Typer(help="Problem folders and problem sets.", no_args_is_help=True)
    app.add_typer(problems_app, name="problems")

    @problems_app.command("validate")
    def validate_cmd(
        path: Path = typer.Argument(
            DEFAULT_PROBLEMS, help="A problem folder, a problem-set file, or a folder of them."
        ),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Check problems and problem sets; print every error with its file, field and what was expected."""
        report = validate_path(path)
        if json_out:
            print_json(report)
        else:
            for issue in report.issues:
                typer.secho(str(issue), fg=typer.colors.RED, err=True)
            if report.ok:
                typer.echo(f"ok: {len(report.problems)} problem(s), {len(report.problem_sets)} problem set(s)")
            else:
                typer.secho(f"{len(report.issues)} error(s)", fg=typer.colors.RED, err=True)
        if not report.ok:
            raise typer.Exit(1)

    @problems_app.command("sync")
    def sync_cmd(
        path: Path = typer.Argument(DEFAULT_SET, help="The problem-set file."),
        force: bool = typer.Option(
            False, "--force", help="Apply changes that make old scores incomparable (the ranking starts over)."
        ),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Create or update one leaderboard per problem of a problem set."""
        with user_errors():
            if not path.is_file():
                raise typer.BadParameter(f"{path} is not a file; pass the problem-set YAML to sync", param_hint="PATH")
            items = sync_problem_set(open_service(), path, force=force)
        if json_out:
            print_json(items)
        else:
            table = Table(title=f"sync {path}")
            for col in ("leaderboard", "action", "details"):
                table.add_column(col)
            for item in items:
                details = "; ".join(item.reasons) or ", ".join(item.changed)
                if item.ranking_reset:
                    details += " (ranking reset)"
                style = "red" if item.action is SyncAction.NEEDS_FORCE else None
                table.add_row(item.leaderboard, item.action.value, details, style=style)
            Console().print(table)
        refused = [i.leaderboard for i in items if i.action is SyncAction.NEEDS_FORCE]
        if refused:
            typer.secho(
                f"not updated: {', '.join(refused)}: these changes would make existing scores incomparable; "
                "re-run with --force to apply them and reset those rankings",
                fg=typer.colors.RED,
                err=True,
            )
            raise typer.Exit(1)
