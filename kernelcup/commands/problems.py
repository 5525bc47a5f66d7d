"""`kernelcup problems validate|sync|get`: check problem folders and sets; turn a problem set into leaderboards;
fetch a leaderboard's public problem folder to run it here (``kernelcup.problem_cache``).

validate and sync run the same checks; ``validate --run`` and ``sync`` (unless ``--skip-run``) also run each
problem's reference on every test case in the sandbox on the CPU (``kernelcup.wiring.reference_check``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kernelcup.commands.common import open_service, print_json, user_errors
from kernelcup.commands.text import safe
from kernelcup.remote import resolve, server_option

if TYPE_CHECKING:
    from rich.table import Table

    from leaderboards.battery import SubmissionRun
    from leaderboards.problems import FormatIssue, Problem
    from leaderboards.public_problem import PublicFolder
    from leaderboards.sync import ReferenceCheck, SyncReport

DEFAULT_PROBLEMS = Path("problems")
DEFAULT_SET = DEFAULT_PROBLEMS / "starter.yaml"

ReferenceCheckFactory = Callable[[], "ReferenceCheck"]
"""Builds the reference check when a command needs it (reads the runner's settings then, not at start-up)."""


def _warn(warnings: tuple[FormatIssue, ...]) -> None:
    for warning in warnings:
        typer.secho(f"warning: {warning}", fg=typer.colors.YELLOW, err=True)


def _announce(problem: Problem, case: dict) -> None:
    held_out = len(problem.task.cases("holdout", problem.task.world_size))
    also = f", its {held_out} held-out cases" if held_out else ""
    typer.echo(f"running the reference of {problem.path} on its test cases (from {case}){also} and each benchmark "
               "case's inputs …", err=True)  # fmt: skip


def _announce_battery(problem: Problem) -> None:
    typer.echo(f"running the exploit battery on {problem.path} …", err=True)


def _sync_table(path: Path, report: SyncReport) -> Table:
    from rich.table import Table

    from leaderboards.results import SyncAction

    table = Table(title=f"sync {safe(path)}")
    for col in ("leaderboard", "action", "details"):
        table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
    for item in report.items:
        details = "; ".join(item.reasons or report.details(item))  # old -> new values: an admin's change shows
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


def register(
    app: typer.Typer,
    *,
    reference_check: ReferenceCheckFactory | None = None,
    battery: Callable[[], SubmissionRun] | None = None,
) -> None:
    """``reference_check``: how to build the reference check (default ``kernelcup.wiring.reference_check``);
    ``battery``: how to build the exploit battery's runner (default: the sandboxed runner, where ``reference_check``
    is the default too)."""
    problems_app = typer.Typer(
        help="Problem folders and problem sets; `get`: a leaderboard's public folder, to run it here.",
        no_args_is_help=True,
    )
    app.add_typer(problems_app, name="problems")
    register_get(problems_app)

    def build_check() -> ReferenceCheck:
        if reference_check is not None:
            return reference_check()
        from kernelcup.wiring import reference_check as default

        return default()

    def build_battery() -> SubmissionRun | None:
        """The exploit battery's runner: this machine's sandboxed runner (``runners.entry.run_request``); none where
        only a reference check was given (tests inject one that runs no submission)."""
        if battery is not None:
            return battery()
        if reference_check is not None:
            return None
        from kernelcup.settings import load
        from runners.entry import run_request
        from runners.settings import RunnerSettings

        settings = load(RunnerSettings)
        return lambda request: run_request(request, settings=settings)

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
            "benchmark case's inputs are generated once and its speed_of_light checked too. Then the exploit "
            "battery: generic bad solutions (zeros, ones, a constant, the input, another seed's answer, the first "
            "row, lower precisions) must fail the check on every test case (docs/authoring.md).",
        ),
        strict: bool = typer.Option(
            False, "--strict", help="With --run: the battery's warnings (lint, an undeclared precision) are errors."
        ),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Check problems and problem sets; print every error with its file, field and what was expected."""
        from leaderboards.sync import validate_path

        with user_errors():
            check = build_check() if run else None
            report = validate_path(
                path,
                check=check,
                device_check=device_check(),
                on_check=None if json_out else _announce,
                battery=build_battery() if run else None,
                on_battery=None if json_out else _announce_battery,
                strict=strict,
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
            "on every test case, and generate each benchmark case's inputs, first; then the exploit battery's bad "
            "solutions must fail that check).",
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
                battery=None if skip_run else build_battery(),
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


def fetch_public_folder(server: str | None, leaderboard: str) -> tuple[PublicFolder, Path | None]:
    """A board's public folder from the server the command talks to (cached), or from the local database."""
    from kernelcup.problem_cache import fetch_folder

    def warn(message: str) -> None:
        typer.secho(f"warning: {message}", fg=typer.colors.YELLOW, err=True)

    return fetch_folder(resolve(server), leaderboard, warn=warn)


def register_get(problems_app: typer.Typer) -> None:
    @problems_app.command("get")
    def get_cmd(
        leaderboard: str = typer.Argument(..., help="The leaderboard whose problem to fetch."),
        dest: Path | None = typer.Option(
            None, "--dir", help="Where to write the folder [default: ./LEADERBOARD]", show_default=False
        ),
        force: bool = typer.Option(
            False, "--force", help="Write into a folder that is not empty (files of the same names are replaced)."
        ),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output (the folder's files too)."),
        server: str | None = server_option(),
    ) -> None:
        """Fetch a leaderboard's public problem folder (task.yml without held-out cases, the reference, the
        templates), to run it here with the same harness: `kernelcup run FOLDER FILE`, or `kernelcup run -l
        LEADERBOARD FILE`, which fetches it itself. Cached: a folder that has not changed is not downloaded again."""
        from kernelcup.problem_cache import same_files, write_folder

        with user_errors():
            folder, cached = fetch_public_folder(server, leaderboard)
            target = dest if dest is not None else Path(folder.leaderboard)
            if target.exists() and not target.is_dir():
                raise typer.BadParameter(f"{target} is a file; pass another --dir", param_hint="--dir")
            if target.is_dir() and any(target.iterdir()) and not force:
                if same_files(target, folder.files):
                    typer.echo(f"{target} already holds {folder.leaderboard}'s problem folder as the server has it")
                    return
                raise typer.BadParameter(f"{target} is not empty; pass another --dir, or --force to write into it "
                                         "(files of the same names are replaced)", param_hint="--dir")  # fmt: skip
            write_folder(target, folder.files)
        if json_out:
            where = {"folder": str(target), "cached": str(cached) if cached else None}
            print_json({"leaderboard": folder.leaderboard, "problem": folder.problem,
                        "fingerprint": folder.fingerprint, **where, "files": folder.files})  # fmt: skip
            return
        fingerprint = folder.fingerprint[:12]
        typer.echo(f"{folder.leaderboard}: {len(folder.files)} files in {target}/ (fingerprint {fingerprint})")
        typer.echo(f"run it here: kernelcup run {target} FILE  (or: kernelcup run -l {folder.leaderboard} FILE)")
