"""``kernelcup run PROBLEM_DIR FILE``: evaluate a submission on this machine, no database involved.

It builds the request with ``load_problem(...).request(...)`` and calls ``runners.entry.run_request``:
the very path a worker takes, minus the queue.
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import typer

from runners.contract import Limits, Mode, ProgressEvent, RunResult

app_help = "Evaluate a submission for a problem folder on this machine (test, benchmark, ranked or profile)."


def register(app: typer.Typer) -> None:
    app.command(name="run", help=app_help)(run)


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


def default_device() -> str:
    """'cuda' when this machine has an NVIDIA GPU (asked without importing PyTorch), else 'cpu'."""
    from runners.sysinfo import gpu_query

    return "cuda" if gpu_query() else "cpu"


def run(
    problem_dir: Path = typer.Argument(..., help="The problem folder (holds task.yml), e.g. problems/vectoradd."),
    file: Path = typer.Argument(..., help="Your submission: a .py file with custom_kernel(data), or a .cu file."),
    mode: Mode = typer.Option(Mode.TEST, "--mode", "-m", help="test, benchmark, ranked or profile."),
    device: str = typer.Option("", "--device", "-d", help="cuda or cpu (default: cuda when a GPU is present)."),
    seed: int | None = typer.Option(None, "--seed", help="Secret seed for ranked mode (default: a random one)."),
    as_json: bool = typer.Option(False, "--json", help="Print the RunResult as JSON instead of a report."),
) -> None:
    from leaderboards.problems import ProblemFormatError, load_problem
    from runners.entry import run_request

    try:
        problem = load_problem(problem_dir)
    except ProblemFormatError as exc:
        _fail(
            f"{problem_dir} is not a valid problem folder:\n{exc}\n(fix task.yml, or point at a folder such as "
            "problems/vectoradd)"
        )
    if not file.is_file():
        _fail(f"submission file {file} not found; pass the path of your .py or .cu file")
    device = device or default_device()
    if device not in ("cuda", "cpu"):
        _fail(f"--device must be cuda or cpu, not {device!r}")
    if mode is Mode.RANKED and seed is None:
        seed = secrets.randbelow(2**31)
    limit = Limits().max_submission_bytes
    if file.stat().st_size > limit:  # refused by its size, before it is read
        _fail(f"{file.name} is {file.stat().st_size:,} bytes; the limit is {limit:,} bytes")
    request = problem.request(file.name, file.read_bytes(), mode, device=device, device_name=device, seed=seed)

    if as_json:
        result = run_request(request)
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        from rich.console import Console

        console = Console(stderr=True)
        with console.status(f"[bold]{problem.name}[/]: starting…") as status:

            def progress(event: ProgressEvent) -> None:
                status.update(f"[bold]{problem.name}[/]: {event.phase.value} {event.detail}")

            result = run_request(request, progress)
        render(result, problem.name, file.name, device)
    raise typer.Exit(0 if result.passed else 1)


def _us(ns: float) -> str:
    return f"{ns / 1000:.3f}"


def render(result: RunResult, problem: str, file_name: str, device: str) -> None:
    """A readable report of one run (Rich)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    colour = "green" if result.passed else ("yellow" if not result.verdict.user_fault else "red")
    console.print(f"[bold]{problem}[/] · {file_name} · {result.mode.value} · {device}")
    detail = result.message
    if detail.startswith(result.verdict.label):  # the message already opens with the verdict's words
        detail = detail[len(result.verdict.label) :].lstrip(" :")
    # Text, not markup: messages quote the submission's own output, which may hold [brackets]
    console.print(Text.assemble((result.verdict.label, f"bold {colour}"), f": {detail}" if detail else ""))
    if result.tests:
        table = Table(title="tests", show_lines=False)
        for col in ("#", "case", "verdict", "details"):
            table.add_column(col)
        for t in result.tests:
            style = "green" if t.verdict.passed else "red"
            table.add_row(str(t.index + 1), _case(t.case), f"[{style}]{t.verdict.label}[/]", t.message[:300])
        console.print(table)
    if result.benchmarks:
        table = Table(title="benchmarks (µs, cold L2)")
        for col in ("#", "case", "median", "mean ± std", "min", "max", "samples", "GB/s", "note"):
            table.add_column(col)
        for b in result.benchmarks:
            s = b.stats
            if s is None:
                table.add_row(
                    str(b.index + 1),
                    _case(b.case),
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    f"{b.verdict.label}: {b.message[:200]}",
                )
                continue
            gbs = f"{b.bytes_moved / s.median_ns:.0f}" if b.bytes_moved else "-"
            table.add_row(
                str(b.index + 1),
                _case(b.case),
                _us(s.median_ns),
                f"{_us(s.mean_ns)} ± {_us(s.std_ns)}",
                _us(s.min_ns),
                _us(s.max_ns),
                str(s.samples),
                gbs,
                b.message[:200],
            )
        console.print(table)
    if result.score_ns is not None:
        console.print(f"score: [bold]{_us(result.score_ns)} µs[/]")
    if result.profile:
        console.print("[bold]profile[/]")
        console.print(result.profile, markup=False, highlight=False)
    if result.compile_output and not result.passed:
        console.print("[bold]compiler output[/]")
        console.print(result.compile_output[-4000:], markup=False, highlight=False)
    for name, text, cut in (
        ("stdout", result.stdout, result.stdout_truncated),
        ("stderr", result.stderr, result.stderr_truncated),
    ):
        if text.strip():
            console.print(f"[bold]{name}[/]" + (" (cut at the output limit)" if cut else ""))
            console.print(text[-2000:], markup=False, highlight=False)
    sysinfo = result.system
    gpu = sysinfo.gpu_name or "no GPU"
    clocks = ""
    if sysinfo.sm_clock_start_mhz:
        clocks = f", SM clock {sysinfo.sm_clock_start_mhz}→{sysinfo.sm_clock_end_mhz} MHz"
    sandbox = "sandboxed" if sysinfo.sandboxed else sysinfo.sandbox_note or "not sandboxed"
    console.print(
        f"[dim]{gpu}; torch {sysinfo.torch}, triton {sysinfo.triton}, CUDA {sysinfo.cuda}, nvcc {sysinfo.nvcc}"
        f"{clocks}; {sandbox}; {result.wall_time_s:.1f} s[/]"
    )


def _case(case: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items())
