"""`kernelcup demo` (what `make demo` runs): the whole path on this machine, on the embedded defaults.

1. Open an embedded SQLite database of its own, in ``demo/`` under the data directory (``KERNELCUP_DATA_DIR``,
   default the user's data directory); ``DATABASE_URL`` is ignored here, so a demo never writes into a real
   deployment and its boards never clutter the user's ``leaderboard list``.
2. Sync the problem set (``problems/starter.yaml``, or the only set in ``problems/``).
3. For each problem that runs on ``cpu``: a ``demo-<problem>`` leaderboard on ``cpu`` whose benchmark cases are
   the problem's largest test cases (the real benchmarks are sized for GPUs and would take hours on a CPU; pass
   ``--full`` to submit to the synced leaderboards and their real benchmarks instead).
4. Submit each problem's example PyTorch solutions (``solutions/correct``) in ranked mode through the service, the
   queue and an in-process worker with the local launcher — the same path as `kernelcup submit` — and print the
   leaderboards.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer
from rich.console import Console

from kernelcup.commands.text import safe

DEMO_DEVICE = "cpu"
DEMO_DATA_DIR = "demo"
"""The demo's own data directory, under the configured one."""
DEMO_PREFIX = "demo-"
DEMO_BENCHMARKS = 2
"""How many of a problem's largest test cases the demo leaderboards benchmark."""


class DemoError(Exception):
    pass


def find_problem_set(root: Path) -> Path:
    """``problems/starter.yaml``, or the only problem-set file in ``problems/``; a clear error otherwise."""
    preferred = root / "starter.yaml"
    if preferred.is_file():
        return preferred
    sets = sorted(p for p in root.glob("*.yaml") if p.is_file()) if root.is_dir() else []
    if len(sets) == 1:
        return sets[0]
    if not sets:
        raise DemoError(
            f"no problem set found: expected {preferred} (a problems/<set>.yaml listing problem folders). "
            "Add one, or pass --set PATH."
        )
    raise DemoError(f"several problem sets in {root} ({', '.join(p.name for p in sets)}); choose one with --set PATH")


def is_pytorch_solution(path: Path) -> bool:
    """A plain PyTorch solution (runs on a CPU quickly): not Triton (slow in the interpreter), not CUDA, and not a
    kernel DSL's (a ``# lang:`` line: Helion, TileLang, CuTe DSL run as their own language, most only on a GPU)."""
    if path.suffix != ".py" or path.name.startswith("_"):
        return False
    text = path.read_text(encoding="utf-8", errors="replace")
    if re.search(r"^#\s*lang:", text, re.MULTILINE):
        return False
    return "triton" not in text and "load_inline" not in text and "cuda" not in path.stem


@dataclass(frozen=True)
class DemoEntry:
    leaderboard: str
    problem_dir: Path
    solutions: tuple[Path, ...]


def demo_problem(problem, count: int = DEMO_BENCHMARKS):  # type: ignore[no-untyped-def]
    """The problem with its largest test cases as benchmarks (by the case's numeric values)."""

    def weight(case: dict) -> float:
        return sum(float(v) for k, v in case.items() if isinstance(v, int | float) and k != "seed")

    tests = list(problem.task.tests)
    benches = sorted(tests, key=weight)[-count:]
    task = problem.task.model_copy(update={"benchmarks": benches})
    return replace(problem, task=task)


def plan(service, set_file: Path, *, full: bool, only: list[str], console: Console) -> list[DemoEntry]:  # type: ignore[no-untyped-def]
    from leaderboards.errors import LeaderboardNotFound, did_you_mean
    from leaderboards.problems import load_problem_set
    from leaderboards.sync import sync_problem_set

    # The demo runs every problem's correct solutions next, which exercises each reference; no separate check.
    report = sync_problem_set(service, set_file, actor="demo")
    console.print(safe(f"synced {set_file}: " + ", ".join(f"{i.leaderboard} ({i.action.value})" for i in report.items)))
    pset, problems = load_problem_set(set_file)
    names = [entry.leaderboard_name for entry in pset.problems]
    for name in only:
        if name not in names:
            hint = did_you_mean(name, names)
            raise DemoError(f"{set_file} has no problem named {name!r}.{hint} It has: {', '.join(names)}.")
    entries = []
    skipped = []
    for entry in pset.problems:
        name = entry.leaderboard_name
        if only and name not in only:
            continue
        if DEMO_DEVICE not in entry.devices:
            skipped.append(f"{name} (not offered on {DEMO_DEVICE})")
            continue
        folder = set_file.parent / entry.directory
        solutions = tuple(sorted(p for p in (folder / "solutions" / "correct").glob("*.py") if is_pytorch_solution(p)))
        if not solutions:
            skipped.append(f"{name} (no PyTorch solution to submit)")
            continue
        target = name
        if not full:
            target = f"{DEMO_PREFIX}{name}"[:100]
            problem = demo_problem(problems[name])
            deadline = datetime.now(UTC) + timedelta(days=365)
            try:
                service.leaderboard(target, include_hidden=True)
                service.update_leaderboard(
                    target, problem=problem, deadline=deadline, devices=[DEMO_DEVICE], force=True, actor="demo"
                )
            except LeaderboardNotFound:
                service.create_leaderboard(
                    problem,
                    name=target,
                    deadline=deadline,
                    devices=[DEMO_DEVICE],
                    creator="demo",
                    description=f"[demo, CPU-sized] {problem.task.description}",
                )
        entries.append(DemoEntry(target, folder, solutions))
    if skipped:  # (a newcomer counted 11 problems synced and 10 solutions submitted, with no word of the other)
        console.print(safe("not submitted to: " + ", ".join(skipped)))
    if not entries:
        raise DemoError(f"no problem in {set_file} lists device {DEMO_DEVICE!r} with a PyTorch solution to submit")
    return entries


def unfinished(db, submission_ids: set[int]) -> set[int]:  # type: ignore[no-untyped-def]
    """Those of these submissions that still have a queued or running job."""
    from sqlalchemy import select

    from leaderboards.models import Job, JobStatus

    with db.transaction() as s:
        return set(
            s.scalars(
                select(Job.submission_id)
                .where(
                    Job.submission_id.in_(submission_ids),
                    Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)),
                )
                .distinct()
            )
        )


CPU_SCORES_NOTE = (
    "note: on a CPU these scores are mostly the evaluator's own cost per call (each call's inputs are written into "
    "a fresh memfd and mapped inside the timed window: runners/oracle/window.py), not the kernels' work; so small "
    "problems read about the same few ms: compare solutions of one problem, not problems. On a GPU the score is the "
    "kernels' time (docs/measurement.md)."
)
"""Said under the demo's rankings on the CPU (a newcomer's walk, 2026-11-29, read vectoradd, histogram, prefixsum
and sort all at 5.1-5.4 ms and wondered why)."""


def local_launcher(console: Console):  # type: ignore[no-untyped-def]
    """The local launcher; sandboxed where bubblewrap works, else (the demo runs the repo's own example
    solutions) unsandboxed, said out loud."""
    from kernelcup.settings import load
    from runners.launchers.local import LocalLauncher
    from runners.sandbox import probe_sandbox
    from runners.settings import RunnerSettings

    settings = load(RunnerSettings)
    bwrap, _, note = probe_sandbox()
    if bwrap is None and not settings.allow_unsandboxed:
        console.print(
            f"[yellow]note: no sandbox here ({safe(note)}); the demo runs its own example solutions unsandboxed[/]"
        )
        settings = settings.model_copy(update={"allow_unsandboxed": True})
    return LocalLauncher(settings)


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(
        problem_set: Path | None = typer.Option(
            None, "--set", help="Problem-set file (default problems/starter.yaml)."
        ),
        problems: list[str] = typer.Option([], "--problem", "-p", help="Only these problems (repeatable)."),
        full: bool = typer.Option(False, "--full", help="Use the real leaderboards and benchmarks (slow on a CPU)."),
    ) -> None:
        """Run the platform end to end here: sync the problems, submit the example solutions, show the rankings."""
        import asyncio

        from kernelcup.commands.common import core_settings, user_errors
        from kernelcup.commands.leaderboard import ranking_table
        from kernelcup.settings import load
        from kernelcup.wiring import build_worker, open_platform
        from leaderboards.formatting import outcome_text as outcome
        from leaderboards.results import UserRef
        from leaderboards.worker import WorkerSettings

        console = Console()
        started = time.monotonic()
        with user_errors():
            base = core_settings()
            demo_dir = base.resolved_data_dir() / DEMO_DATA_DIR
            core = base.model_copy(update={"database_url": None, "data_dir": demo_dir})
            root = Path(__file__).resolve().parents[2] / "problems"
            try:
                set_file = problem_set or find_problem_set(root if root.is_dir() else Path("problems"))
            except DemoError as exc:
                typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
                raise typer.Exit(1) from None
            with open_platform(core) as platform:
                console.print(f"database: {safe(platform.db.engine.url.render_as_string(hide_password=True))}")
                service = platform.service
                try:
                    entries = plan(service, set_file, full=full, only=problems, console=console)
                except DemoError as exc:
                    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
                    raise typer.Exit(1) from None
                submitted = []
                for e in entries:
                    for sol in e.solutions:
                        who = UserRef(f"demo-{sol.stem}")
                        r = service.submit(who, sol.name, sol.read_bytes(), e.leaderboard, [DEMO_DEVICE], "ranked")
                        submitted.append((e.leaderboard, sol, r.submission_id))
                # Off a terminal (piped, as in CI) the spinner below prints nothing for minutes: each solution's line
                # is printed as it finishes, on a terminal too (above the spinner). A newcomer's walk, 2026-11-29.
                each = "" if console.is_terminal else " (a line as each finishes)"
                console.print(
                    f"submitted {len(submitted)} solutions in ranked mode on {DEMO_DEVICE}; running them{each}"
                )
                ids = {sid for _, _, sid in submitted}
                worker = build_worker(
                    platform,
                    devices=[DEMO_DEVICE],
                    launcher="local",
                    settings=load(WorkerSettings),
                    local=local_launcher(console),
                )
                shown: set[int] = set()

                def show(done: set[int]) -> None:
                    """One line per solution that finished (in the order submitted), with its verdict."""
                    for lb, sol, sid in submitted:
                        if sid in done and sid not in shown:
                            shown.add(sid)
                            job = service.submission_status(sid).jobs[0]
                            tail = f" ({job.error})" if job.error else ""
                            line = f"  {lb}: {sol.parent.parent.parent.name}/{sol.name} -> "
                            console.print(safe(f"{line}{outcome(job.status, job.verdict)}{tail}"))

                with console.status("evaluating…") as status:

                    def finished() -> bool:
                        left = unfinished(platform.db, ids)
                        show(ids - left)
                        status.update(f"evaluating… {len(ids) - len(left)}/{len(ids)} submissions done")
                        return not left

                    asyncio.run(worker.run(until=finished))
                show(ids)  # any the worker left unfinished (stopped): their state as it is
                for name in dict.fromkeys(lb for lb, _, _ in submitted):
                    console.print(ranking_table(service.ranking(name, DEMO_DEVICE)))
                if DEMO_DEVICE == "cpu":
                    console.print(CPU_SCORES_NOTE)
        console.print(
            f"demo finished in {time.monotonic() - started:.0f} s. Its leaderboards are in a data directory of "
            f"their own: `KERNELCUP_DATA_DIR={safe(demo_dir)} kernelcup leaderboard list` shows them. Next: "
            "`kernelcup problems sync`, `kernelcup submit FILE -l LEADERBOARD -d DEVICE`."
        )
