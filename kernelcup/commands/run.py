"""``kernelcup run PROBLEM_DIR FILE...``: evaluate submissions on this machine, no database involved; ``--compare``
two of them (``runners.compare``). ``kernelcup run -l LEADERBOARD FILE...`` runs a leaderboard's public problem
folder instead (``kernelcup.problem_cache``: fetched from the server and cached, or the local database's).

It builds the request with ``load_problem(...).request(...)`` and calls ``runners.entry.run_request``:
the very path a worker takes, minus the queue.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from kernelcup.choices import LangChoice, ModeChoice, RunDevice
from kernelcup.commands.output import output_to
from kernelcup.remote import server_option

if TYPE_CHECKING:
    from rich.console import Console

    from leaderboards.problems import Problem
    from runners.contract import Comparison, ComparisonMetrics, ProgressEvent, RunRequest, RunResult
    from runners.entry.prestart import Prestarter
    from runners.settings import RunnerSettings

PROBLEMS_ROOT = Path("problems")
PLAIN_PROGRESS_S = 10.0
"""Where stderr is no terminal: a progress line at each phase, and at most this often within one."""
"""Where ``kernelcup run`` looks for a problem folder to suggest (relative to the working directory)."""

app_help = "Evaluate a submission for a problem folder on this machine (test, benchmark, ranked or profile)."


def register(app: typer.Typer) -> None:
    app.command(name="run", help=app_help)(run)


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


def _suggestion(problem_dir: Path) -> str:
    """The problem folders nearest to ``problem_dir`` (siblings, then ``problems/``), or the ones that exist."""
    from leaderboards.problem_files import nearest_problem_folders, problem_folders

    near = nearest_problem_folders(problem_dir, (PROBLEMS_ROOT,))
    if near:
        return f"did you mean {' or '.join(map(str, near))}?"
    existing = problem_folders(PROBLEMS_ROOT)
    if existing:
        return f"the problem folders in {PROBLEMS_ROOT}/ are: {', '.join(p.name for p in existing)}"
    return "pass the folder that holds the problem's task.yml"


def check_arguments(problem_dir: Path, file: Path) -> None:
    """Refuse swapped, missing or mistyped arguments with a message that says which argument is which."""
    usage = "`kernelcup run PROBLEM_DIR FILE`: first the problem folder (it holds task.yml), then your file"
    if problem_dir.is_file() and (file.is_dir() or not file.exists()):
        if file.is_dir():
            _fail(f"the arguments are swapped: {usage}; try `kernelcup run {file} {problem_dir}`")
        _fail(f"{problem_dir} is a file, but {usage}; {_suggestion(file)}")
    if problem_dir.is_file():
        _fail(f"{problem_dir} is a file, not a problem folder: {usage}; {_suggestion(problem_dir)}")
    if not problem_dir.exists():
        _fail(f"there is no problem folder {problem_dir}; {_suggestion(problem_dir)}")
    if file.is_dir():
        _fail(f"{file} is a folder, but the second argument is your submission file (.py or .cu): {usage}")
    if not file.is_file():
        _fail(f"submission file {file} not found; pass the path of your .py or .cu file")


def default_device() -> str:
    """'cuda' when this machine has an NVIDIA GPU (asked without importing PyTorch), else 'cpu'."""
    from runners.sysinfo import gpu_query

    return "cuda" if gpu_query() else "cpu"


def run(
    paths: list[Path] = typer.Argument(
        ...,
        metavar="[PROBLEM_DIR] FILE",
        help="The problem folder (holds task.yml, e.g. problems/vectoradd; left out with --leaderboard), then your "
        "submission(s): .py files with custom_kernel(data), or .cu files. Several: run each in turn.",
        show_default=False,
    ),
    leaderboard: str | None = typer.Option(
        None,
        "--leaderboard",
        "-l",
        help="Run a leaderboard's problem instead of a folder: its public folder is fetched from the server "
        "(`kernelcup problems get`; cached) or read from the local database.",
    ),
    mode: ModeChoice | None = typer.Option(
        None, "--mode", "-m", help="What to run (default: test; benchmark with --compare; leaderboard: ranked)."
    ),
    device: RunDevice | None = typer.Option(
        None, "--device", "--gpu", "-d", help="This machine's GPU or its CPU (default: cuda when a GPU is present)."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Secret seed for ranked mode (default: a random one)."),
    compare: bool = typer.Option(
        False,
        "--compare",
        help="Compare two files: interleaved benchmark runs and their time ratio with a 95% interval.",
    ),
    rounds: int | None = typer.Option(
        None,
        "--rounds",
        min=2,
        max=50,
        help="With --compare: the most benchmark runs of each file (even: each first as often; default 20 on a GPU, "
        "6 on the CPU). It stops earlier, after 6 or more, once the A/B ratio is known within ±0.4%.",
    ),
    profile: bool = typer.Option(
        False,
        "--profile",
        help="With --compare, on a GPU: after the ratio, profile each case of both files under Nsight Compute and "
        "show their dominant kernels side by side (DRAM %, SM %, occupancy, registers, top stall) with the deltas.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the RunResult as JSON instead of a report."),
    lang: LangChoice | None = typer.Option(
        None,
        "--lang",
        help="Run in this language instead of the problem's own, as a problem set's lang: does (a Python DSL on a "
        "Python problem: helion, tilelang, cute-dsl).",
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the result to this file (JSON with --json, else the report as text)."
    ),
    server: str | None = server_option(),
) -> None:
    with output_to(output):
        _run(paths, leaderboard, mode, device, seed, compare, rounds, as_json, lang, server, profile)


def _run(paths: list[Path], leaderboard: str | None, mode: ModeChoice | None, device: RunDevice | None,
         seed: int | None, compare: bool, rounds: int | None, as_json: bool, lang: LangChoice | None,
         server: str | None, profile: bool = False) -> None:  # fmt: skip
    from kernelcup.settings import SettingsError, load
    from leaderboards.problems import ProblemFormatError, load_problem
    from runners.compare import CPU_ROUNDS, DEFAULT_ROUNDS
    from runners.contract import Language, Limits, Mode
    from runners.entry.prestart import Prestarter
    from runners.settings import RunnerSettings

    problem_dir, files = (None, paths) if leaderboard else (paths[0], paths[1:])
    if problem_dir is not None and not files:
        if problem_dir.is_file():
            _fail(f"{problem_dir} is your file: pass the problem folder before it (`kernelcup run PROBLEM_DIR "
                  f"{problem_dir}`), or the leaderboard (`kernelcup run -l LEADERBOARD {problem_dir}`)")  # fmt: skip
        _fail(f"pass your file after the problem folder: `kernelcup run {problem_dir} FILE`")
    for file in files:
        if problem_dir is not None:
            check_arguments(problem_dir, file)
        elif file.is_dir() or not file.is_file():
            what = "is a folder" if file.is_dir() else "is not found"
            _fail(f"submission file {file} {what}; with --leaderboard, pass only your file(s): `kernelcup run -l "
                  f"{leaderboard} FILE`")  # fmt: skip
    if compare and len(files) != 2:
        _fail(f"--compare takes exactly two files, not {len(files)}: `kernelcup run PROBLEM_DIR A.py B.py --compare`")
    if compare and mode is not None and mode is not ModeChoice.BENCHMARK:
        _fail(f"--compare runs benchmark mode; drop --mode {mode.value}")
    if profile and not compare:
        _fail("--profile adds Nsight Compute's kernel metrics to a comparison: `kernelcup run PROBLEM_DIR A.py B.py "
              "--compare --profile`; to profile one file, use --mode profile")  # fmt: skip
    if compare and rounds is not None and rounds % 2:
        _fail(f"--rounds must be even (each file runs first as often as second), not {rounds}; try {rounds + 1}")
    from_server = False
    if problem_dir is None:
        problem, from_server = _leaderboard_problem(str(leaderboard), server)
    else:
        try:
            problem = load_problem(problem_dir)
        except ProblemFormatError as exc:
            has_task = (problem_dir / "task.yml").exists()
            hint = "fix task.yml" if has_task else f"no task.yml here; {_suggestion(problem_dir)}"
            _fail(f"{problem_dir} is not a valid problem folder:\n{exc}\n({hint})")
    if lang is not None:
        try:
            problem = problem.in_language(Language(lang.value))
        except ValueError as exc:
            _fail(f"--lang {lang.value}: {exc}")
    run_mode = Mode.BENCHMARK if compare else Mode((mode or ModeChoice.TEST).mode)
    target = (device or RunDevice(default_device())).value
    if target == "cuda" and default_device() == "cpu":  # refused at once: the run would only fail later
        _fail("this machine has no GPU (no NVIDIA driver answers); run with --device cpu")
    if profile and target == "cpu":
        _fail("--compare --profile needs a GPU: Nsight Compute profiles CUDA kernels. Drop --profile to compare on "
              "the CPU, or run with --device cuda on a machine with an NVIDIA GPU")  # fmt: skip
    if rounds is None:  # a CPU's timings are for trying things out: its noise would keep a compare from settling
        rounds = CPU_ROUNDS if target == "cpu" else DEFAULT_ROUNDS
    if run_mode is Mode.RANKED and seed is None:
        seed = secrets.randbelow(2**31)
    limit = Limits().max_submission_bytes
    for file in files:
        if file.stat().st_size > limit:  # refused by its size, before it is read
            _fail(f"{file.name} is {file.stat().st_size:,} bytes; the limit is {limit:,} bytes")
    # One invocation's benchmark runs share the baselines timed on its GPU (KERNELCUP_BASELINE_REUSE_S): one person's.
    group = f"kernelcup run {secrets.token_hex(8)}" if run_mode is Mode.BENCHMARK else ""
    requests = [
        problem.request(f.name, f.read_bytes(), run_mode, device=target, device_name=target, seed=seed).model_copy(
            update={"baseline_group": group}
        )
        for f in files
    ]
    if from_server:
        _need_sandbox(str(leaderboard))
    try:
        runner = load(RunnerSettings)
    except SettingsError as exc:
        _fail(str(exc))
    # Several runs in a row: each one's processes start while the one before it runs (KERNELCUP_PRESTART).
    prestart = Prestarter(runner) if len(requests) > 1 and runner.prestart else None
    placement, release = _take_gpus(requests, target, runner)
    if from_server:
        placement = {**placement, "require_sandbox": True}  # (and refused above where bubblewrap cannot run)
    try:
        if compare:
            _compare(problem.name, requests[0], requests[1], runner, rounds, as_json, prestart, placement,
                     profile=profile)  # fmt: skip
        results = [_run_one(problem.name, request, target, runner, as_json, quiet=len(files) > 1, prestart=prestart,
                            placement=placement) for request in requests]  # fmt: skip
    finally:
        if prestart is not None:
            prestart.close()
        release()
    if len(results) > 1:
        if as_json:
            sys.stdout.write("[" + ",\n".join(r.model_dump_json(indent=2) for r in results) + "]\n")
        else:
            _render_batch(results, [f.name for f in files])
    raise typer.Exit(0 if all(r.passed for r in results) else 1)


def _leaderboard_problem(leaderboard: str, server: str | None) -> tuple[Problem, bool]:
    """A leaderboard's problem from its public folder (fetched and cached, or the local database's), run as the
    server runs it: its own files, its own ``_lib``; and whether it came from a server (not this machine's database)."""
    from kernelcup.commands.common import user_errors
    from kernelcup.problem_cache import fetch_folder
    from kernelcup.remote import resolve
    from leaderboards.public_problem import problem_from_folder

    def warn(message: str) -> None:
        typer.secho(f"warning: {message}", fg=typer.colors.YELLOW, err=True)

    with user_errors():
        login = resolve(server)
        folder, cached = fetch_folder(login, leaderboard, warn=warn)
        if cached is not None:
            typer.echo(f"{leaderboard}: the problem folder is {cached}", err=True)
        return problem_from_folder(folder.problem, folder.files), login is not None


def _need_sandbox(leaderboard: str) -> None:
    """A problem fetched from a server runs its reference and ``_lib`` (code from that server, or from whoever sits
    between it and here) in the evaluator: only in the sandbox, whatever runs your own folders unsandboxed."""
    from runners.sandbox.view import probe_sandbox

    bwrap, _hardened, note = probe_sandbox()
    if bwrap is None:
        _fail(f"{leaderboard}'s reference and _lib come from the server, and run here only in the sandbox, which "
              f"cannot run ({note}). Install bubblewrap, or fetch the folder (`kernelcup problems get {leaderboard}`), "
              "read it, and run it as your own: `kernelcup run FOLDER FILE`")  # fmt: skip


def _take_gpus(
    requests: list[RunRequest], target: str, runner: RunnerSettings
) -> tuple[dict[str, Any], Callable[[], None]]:
    """On a GPU: the GPU(s) the runs use (run_request's ``gpu``/``gpus``), taken machine-wide for the whole command
    (KERNELCUP_GPU_LOCK_DIR), so that a worker or another ``kernelcup run`` on this machine never times a run on
    them meanwhile; while another process holds them this waits, and says so. Without a GPU listing: as it was."""
    if target == "cpu":
        return {}, lambda: None
    import asyncio

    from rich.console import Console

    from runners.gpus import GpuPool, list_gpus, usable

    try:
        gpus = usable(list_gpus())
    except ValueError as exc:
        _fail(str(exc))
    world = max(r.world_size for r in requests)
    if len(gpus) < world:  # none listed, or too few: run_request says what is missing
        return {}, lambda: None
    pool = GpuPool(gpus, runner.gpu_lock_dir)

    def tell(detail: str) -> None:
        Console(stderr=True).print(f"{detail}; the run starts when it is free (Ctrl-C to give up)")

    try:
        taken = asyncio.run(pool.acquire_many(world, on_wait=tell))
    except RuntimeError as exc:  # the lock folder cannot be used: its message names the setting
        _fail(str(exc))

    def release() -> None:
        for gpu in taken:
            pool.release(gpu)

    return ({"gpus": taken} if world > 1 else {"gpu": taken[0]}), release


def _run_one(name: str, request: RunRequest, target: str, runner: RunnerSettings, as_json: bool,
             *, quiet: bool, prestart: Prestarter | None = None,
             placement: dict[str, Any] | None = None) -> RunResult:  # fmt: skip
    """One run, with live progress on stderr; its report (or JSON) unless ``quiet`` (a batch shows a table)."""
    from rich.console import Console

    from kernelcup.commands.text import safe
    from runners.entry import run_request

    if as_json and not quiet:
        result = run_request(request, settings=runner, prestart=prestart, **(placement or {}))
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        return result
    console = Console(stderr=True)
    file_name = request.submission.name
    shown: dict[str, Any] = {"phase": None, "at": 0.0}
    with console.status(f"[bold]{safe(name)}[/] · {safe(file_name)}: starting…") as status:

        def progress(event: ProgressEvent) -> None:
            status.update(f"[bold]{safe(name)}[/] · {safe(file_name)}: {event.phase.value} {safe(event.detail)}")
            # Not a terminal (a log, a pipe): the spinner shows nothing, so a line per phase, and every 10 s within
            # one (a newcomer's CPU benchmark printed nothing for 11 minutes). The runner's line for a step that goes
            # on with nothing new (``waited_s``, at least every 10 s: a hanging kernel) is a line on a terminal too.
            now = time.monotonic()
            plain = not console.is_terminal and (event.phase != shown["phase"] or now - shown["at"] >= PLAIN_PROGRESS_S)
            if event.waited_s is not None or plain:
                console.print(f"{name} · {file_name}: {event.phase.value} {event.detail}", markup=False,
                              highlight=False)  # fmt: skip
                shown.update(phase=event.phase, at=now)

        result = run_request(request, progress, settings=runner, prestart=prestart, **(placement or {}))
    if not quiet:
        render(result, name, file_name, target)
    if result.ncu_report:
        saved = save_ncu_report(result.ncu_report, Path.cwd() / f"{Path(file_name).stem}.ncu-rep")
        console.print(f"Nsight Compute report: {safe(str(saved))} (open it with ncu-ui)")
    return result


def _render_batch(results: list[RunResult], names: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    from kernelcup.commands.text import safe
    from leaderboards.formatting import format_ns, printable

    table = Table(title=f"{len(results)} files")
    for col in ("file", "verdict", "score", "wall", "message"):
        table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
    for name, r in zip(names, results, strict=True):
        style = "green" if r.passed else "red"
        score = format_ns(r.score_ns) if r.score_ns is not None else "-"
        table.add_row(safe(name), f"[{style}]{r.verdict.label}[/]", score, f"{r.wall_time_s:.1f} s",
                      safe(printable(r.message)[:160]))  # fmt: skip
    Console().print(table)


def _compare(name: str, a: RunRequest, b: RunRequest, runner: RunnerSettings, rounds: int, as_json: bool,
             prestart: Prestarter | None = None, placement: dict[str, Any] | None = None, *,
             profile: bool = False) -> NoReturn:  # fmt: skip
    from rich.console import Console

    from kernelcup.commands.text import safe
    from runners.compare import compare, round_text
    from runners.entry import run_request

    console = Console(stderr=True)
    with console.status(f"[bold]{safe(name)}[/]: comparing, {round_text(1, rounds)}…") as status:
        quiet = runner.model_copy(update={"time_baselines": False})  # a comparison reports no speedups

        def run(request: RunRequest) -> RunResult:
            return run_request(request, settings=quiet, prestart=prestart, **(placement or {}))

        def on_round(done: int, total: int) -> None:
            status.update(f"[bold]{safe(name)}[/]: comparing, {round_text(min(done + 1, total), total)}…")

        result = compare(a, b, run, rounds=rounds, on_round=on_round)
        if profile and result.verdict.passed:
            from runners.compare_profile import cannot_profile, profile_pair, unavailable

            def on_case(case: int, cases: int) -> None:
                status.update(f"[bold]{safe(name)}[/]: profiling both files under Nsight Compute, case {case} of "
                              f"{cases}…")  # fmt: skip

            why = cannot_profile(quiet, a)  # said in the result: the comparison stands without the metrics
            metrics = unavailable(why) if why else profile_pair(a, b, run, (result.a, result.b), on_case)
            result = result.model_copy(update={"metrics": metrics})
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        raise typer.Exit(0 if result.verdict.passed else 1)
    render_comparison(Console(), result)
    raise typer.Exit(0 if result.verdict.passed else 1)


def render_comparison(console: Console, result: Comparison) -> None:
    """A comparison's report: per case each file's median and the A/B ratio with its 95% interval, then the
    verdict in words (or the failed run's verdict and message). Outside text is escaped."""
    from rich.table import Table

    from kernelcup.commands.text import safe
    from leaderboards.formatting import format_ns, printable

    if not result.verdict.passed:
        console.print(f"[red]{result.verdict.label}[/]: {safe(printable(result.message))}")
        return
    table = Table(title=f"{safe(result.a)} vs {safe(result.b)}: {result.rounds} interleaved rounds (A/B time ratio)")
    sides = [side if name == side else f"{side}: {safe(name)}" for side, name in (("A", result.a), ("B", result.b))]
    for col in ("#", "case", *sides, "A/B", "95% interval"):  # (files of one name are called A and B)
        table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
    for c in result.cases:
        table.add_row(str(c.index + 1), safe(_case(c.case)), format_ns(c.median_a_ns), format_ns(c.median_b_ns),
                      f"{c.ratio:.4f}", f"{c.ci_low:.4f} to {c.ci_high:.4f}")  # fmt: skip
    console.print(table)
    console.print(safe(printable(result.message)))
    if result.metrics is not None:
        render_metrics(console, result.metrics)


def render_metrics(console: Console, metrics: ComparisonMetrics) -> None:
    """``--compare --profile``'s kernel metrics, compact: per case a line per dominant kernel pair, each metric as
    'A | B (A-B)'; or why there are none. Kernel names are the submissions' own text: escaped."""
    from kernelcup.commands.text import safe
    from leaderboards.formatting import printable
    from runners.compare_profile import row_text

    if metrics.collector == "none" and not any(c.kernels for c in metrics.cases):
        console.print(safe(printable(metrics.note or "no kernel metrics")), highlight=False)
        return
    console.print("[bold]kernel metrics[/] (Nsight Compute, one profiled call a case; each A | B, then A-B)")
    for c in metrics.cases:
        note = f": {safe(printable(c.note))}" if c.note else ""
        console.print(f"case {c.index + 1} ({safe(_case(c.case))}){note}", highlight=False)
        for row in c.kernels:
            console.print("  " + safe(printable(row_text(row))), highlight=False)


def save_ncu_report(report: bytes, path: Path) -> Path:
    """Write the report to ``path``, or next to it with a number (``kernel-2.ncu-rep``) when that file exists."""
    target, n = path, 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.stem}-{n}{path.suffix}")
    target.write_bytes(report)
    return target


def render(result: RunResult, problem: str, file_name: str, device: str) -> None:
    """A readable report of one run (Rich). Every outside text (names, messages, the submission's output) is
    escaped or printed without markup, and stripped of terminal control sequences."""
    from rich.table import Table
    from rich.text import Text

    from kernelcup.commands.common import report_console
    from kernelcup.commands.text import safe
    from leaderboards.formatting import (
        MIN_SAMPLES_FOR_SPREAD,
        format_ns,
        format_share,
        format_speedup,
        format_spread,
        printable,
        roofline_summary,
    )

    console = report_console()
    colour = "green" if result.passed else ("yellow" if not result.verdict.user_fault else "red")
    console.print(f"[bold]{safe(problem)}[/] · {safe(file_name)} · {result.mode.value} · {safe(device)}")
    detail = result.message
    if detail.startswith(result.verdict.label):  # the message already opens with the verdict's words
        detail = detail[len(result.verdict.label) :].lstrip(" :")
    # Text, not markup: messages quote the submission's own output, which may hold [brackets]
    console.print(Text.assemble((result.verdict.label, f"bold {colour}"), f": {printable(detail)}" if detail else ""))
    if result.tests:
        table = Table(title="tests", show_lines=False)
        for col in ("#", "case", "verdict", "details"):
            table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
        for t in result.tests:
            style = "green" if t.verdict.passed else "red"
            table.add_row(
                str(t.index + 1), safe(_case(t.case)), f"[{style}]{t.verdict.label}[/]", safe(t.message[:300])
            )
        console.print(table)
    if result.benchmarks:
        table = Table(title="benchmarks (cold L2)")
        for col in ("#", "case", "median", "spread", "min", "max", "GB/s", "roofline", "note"):
            table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
        few = False
        for b in result.benchmarks:
            s = b.stats
            if s is None:
                note = f"{b.verdict.label}: {b.message[:200]}"
                table.add_row(str(b.index + 1), safe(_case(b.case)), *["-"] * 6, safe(note))
                continue
            few = few or s.samples < MIN_SAMPLES_FOR_SPREAD
            gbs = f"{b.bytes_moved / s.median_ns:.0f}" if b.bytes_moved else "-"
            roofline = f"{format_share(b.roofline_share)} {b.roofline_limit}" if b.roofline_share is not None else "-"
            table.add_row(
                str(b.index + 1),
                safe(_case(b.case)),
                format_ns(s.median_ns),
                format_spread(s),
                format_ns(s.min_ns),
                format_ns(s.max_ns),
                gbs,
                roofline,
                safe(b.message[:200]),
            )
        console.print(table)
        if few:
            console.print(
                f"[yellow]warning: some cases have fewer than {MIN_SAMPLES_FOR_SPREAD} samples; their times are "
                "single readings, not a measurement to compare[/]"
            )
    if any(b.kernels is not None for b in result.benchmarks) or result.provenance is not None:
        from leaderboards.formatting import kernels_text, provenance_text

        for b in result.benchmarks:
            if b.kernels is not None:
                console.print(f"kernels {b.index + 1}: {safe(kernels_text(b))}", highlight=False)
            if b.digest:
                console.print(f"digest {b.index + 1}: {safe(b.digest)}", highlight=False)
        if result.provenance is not None:
            console.print(safe(provenance_text(result)), highlight=False)
    if result.score_ns is not None:
        overall = roofline_summary(result)
        console.print(f"score: [bold]{format_ns(result.score_ns)}[/]" + (f" · {safe(overall)}" if overall else ""))
    for baseline in result.baselines:
        console.print(safe(format_speedup(baseline)))
    if result.kernel_metrics:
        from leaderboards.formatting import KERNEL_COLUMNS, kernel_row

        table = Table(title="kernels (Nsight Compute)")
        for col in KERNEL_COLUMNS:
            table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
        for kernel in result.kernel_metrics:
            table.add_row(*(safe(cell) for cell in kernel_row(kernel)))
        console.print(table)
    if result.profile:
        console.print("[bold]profile[/]")
        console.print(printable(result.profile), markup=False, highlight=False)
    if result.compile_output and not result.passed:
        console.print("[bold]compiler output[/]")
        console.print(printable(result.compile_output[-4000:]), markup=False, highlight=False)
    for name, text, cut in (
        ("stdout", result.stdout, result.stdout_truncated),
        ("stderr", result.stderr, result.stderr_truncated),
    ):
        if text.strip():
            console.print(f"[bold]{name}[/]" + (" (cut at the output limit)" if cut else ""))
            console.print(printable(text[-2000:]), markup=False, highlight=False)
    sysinfo = result.system
    gpu = sysinfo.gpu_name or "no GPU"
    if sysinfo.world_size > 1:
        ranks = sysinfo.world_size
        gpu = f"{ranks} ranks ({ranks} x {gpu})" if sysinfo.gpu_name else f"{ranks} ranks on the CPU"
    clocks = ""
    if sysinfo.sm_clock_start_mhz:
        clocks = f", SM clock {sysinfo.sm_clock_start_mhz}→{sysinfo.sm_clock_end_mhz} MHz"
    sandbox = "sandboxed" if sysinfo.sandboxed else sysinfo.sandbox_note or "not sandboxed"
    headers = f", {sysinfo.headers}" if sysinfo.headers else ""  # the language's library: CUTLASS, Helion, ...
    info = (
        f"{gpu}; torch {sysinfo.torch}, triton {sysinfo.triton}, CUDA {sysinfo.cuda}, nvcc {sysinfo.nvcc}{headers}"
        f"{clocks}; {sandbox}; {result.wall_time_s:.1f} s"
    )
    console.print(f"[dim]{safe(info)}[/]")


def _case(case: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items())
